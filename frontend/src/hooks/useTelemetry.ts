/**
 * Live telemetry over WS /ws/telemetry: reconnects with exponential backoff, says when the data
 * is stale, and keeps a bounded history (TelemetryStore's rings) whatever the session length.
 */
import { useEffect, useState, useSyncExternalStore } from "react";
import { openSocket } from "../client/api";
import type { NodeSample } from "../client/types";
import { TelemetryStore } from "./telemetryStore";

export type ConnectionState = "connecting" | "open" | "closed";

export interface TelemetryOptions {
  path?: string;
  /** no sample for this long marks the data stale */
  staleAfterMs?: number;
  /** samples kept per device (at 1 Hz, 600 = 10 minutes; the snapshot asks for as much) */
  capacity?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** for tests: a WebSocket stand-in */
  WebSocketImpl?: typeof WebSocket;
}

export interface Telemetry {
  store: TelemetryStore;
  version: number;
  connection: ConnectionState;
  stale: boolean;
  /** reconnect attempts since the last successful open */
  attempts: number;
}

/** The backend's TelemetryMessage: a snapshot (history, oldest first) on connect, then samples. */
interface Message {
  type: "snapshot" | "sample";
  samples: NodeSample[];
}

/** Delay before reconnect attempt `attempt` (0-based): base * 2^attempt, capped, with jitter. */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number, random = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** attempt);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

export function handleMessage(store: TelemetryStore, raw: string): void {
  let message: Message;
  try {
    message = JSON.parse(raw) as Message;
  } catch {
    return;
  }
  if (!message || !Array.isArray(message.samples)) return;
  if (message.type === "snapshot") store.loadSnapshot(message.samples);
  else if (message.type === "sample") store.ingest(message.samples);
}

export function useTelemetry(options: TelemetryOptions = {}): Telemetry {
  const {
    path = "/ws/telemetry?history_s=600",
    staleAfterMs = 5000,
    capacity = 600,
    baseDelayMs = 500,
    maxDelayMs = 15000,
    WebSocketImpl,
  } = options;
  const [store] = useState(() => new TelemetryStore(capacity));
  const version = useSyncExternalStore(store.subscribe, store.getVersion);
  const [connection, setConnection] = useState<ConnectionState>("connecting");
  const [attempts, setAttempts] = useState(0);
  const [stale, setStale] = useState(false);

  useEffect(() => {
    const Impl = WebSocketImpl ?? WebSocket;
    let socket: WebSocket | null = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let attempt = 0;
    let disposed = false;

    const connect = () => {
      setConnection("connecting");
      socket = openSocket(path, Impl);
      socket.onopen = () => {
        attempt = 0;
        setAttempts(0);
        setConnection("open");
      };
      socket.onmessage = (event: MessageEvent) => {
        if (typeof event.data === "string") handleMessage(store, event.data);
      };
      socket.onclose = () => {
        socket = null;
        if (disposed) return;
        setConnection("closed");
        const delay = backoffDelay(attempt, baseDelayMs, maxDelayMs);
        attempt += 1;
        setAttempts(attempt);
        timer = setTimeout(connect, delay);
      };
      socket.onerror = () => socket?.close();
    };
    connect();
    return () => {
      disposed = true;
      clearTimeout(timer);
      if (socket) {
        socket.onclose = null;
        socket.onmessage = null;
        socket.close();
      }
    };
  }, [store, path, baseDelayMs, maxDelayMs, WebSocketImpl]);

  useEffect(() => {
    const check = () => {
      const last = store.lastReceivedAt();
      setStale(last === null ? false : Date.now() - last > staleAfterMs);
    };
    check();
    const interval = setInterval(check, 1000);
    return () => clearInterval(interval);
  }, [store, staleAfterMs]);

  return { store, version, connection, stale: stale || (connection !== "open" && store.lastReceivedAt() !== null), attempts };
}
