/**
 * Live telemetry over WS /ws/telemetry: reconnects with exponential backoff (the shared
 * reconnecting socket), says when the data is stale, and keeps a bounded history
 * (TelemetryStore's rings) whatever the session length.
 */
import { useCallback, useEffect, useState, useSyncExternalStore } from "react";
import type { NodeSample } from "../client/types";
import { TelemetryStore } from "./telemetryStore";
import { useReconnectingSocket, type ConnectionState, type ReconnectOptions } from "./useReconnectingSocket";

export interface TelemetryOptions extends ReconnectOptions {
  path?: string;
  /** no sample for this long marks the data stale */
  staleAfterMs?: number;
  /** samples kept per device (at 1 Hz, 600 = 10 minutes; the snapshot asks for as much) */
  capacity?: number;
}

export interface Telemetry {
  store: TelemetryStore;
  version: number;
  connection: ConnectionState;
  stale: boolean;
  /** reconnect attempts since the last successful open */
  attempts: number;
  /** the server's reason telemetry cannot be read now (its store is down), or null */
  unavailable: string | null;
}

/**
 * The backend's TelemetryMessage: a snapshot (history, oldest first) on connect, then samples;
 * `unavailable` (with a message) while the server cannot read telemetry, `available` after.
 */
interface Message {
  type: "snapshot" | "sample" | "unavailable" | "available";
  samples: NodeSample[];
  message?: string | null;
}

/** Feeds one message to the store; returns the server's availability when the message says it
 * (a reason string while unavailable, null once available again), else undefined. */
export function handleMessage(store: TelemetryStore, raw: string): string | null | undefined {
  let message: Message;
  try {
    message = JSON.parse(raw) as Message;
  } catch {
    return undefined;
  }
  if (!message) return undefined;
  if (message.type === "unavailable") return message.message ?? "telemetry unavailable";
  if (message.type === "available") return null;
  if (!Array.isArray(message.samples)) return undefined;
  if (message.type === "snapshot") store.loadSnapshot(message.samples);
  else if (message.type === "sample") store.ingest(message.samples);
  return message.type === "snapshot" ? null : undefined;
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
  const [stale, setStale] = useState(false);
  const [unavailable, setUnavailable] = useState<string | null>(null);
  const onMessage = useCallback(
    (raw: string) => {
      const availability = handleMessage(store, raw);
      if (availability !== undefined) setUnavailable(availability);
    },
    [store],
  );
  const { connection, attempts } = useReconnectingSocket(path, onMessage, { baseDelayMs, maxDelayMs, WebSocketImpl });

  useEffect(() => {
    const check = () => {
      const last = store.lastReceivedAt();
      setStale(last === null ? false : Date.now() - last > staleAfterMs);
    };
    check();
    const interval = setInterval(check, 1000);
    return () => clearInterval(interval);
  }, [store, staleAfterMs]);

  return {
    store,
    version,
    connection,
    stale: stale || (connection !== "open" && store.lastReceivedAt() !== null),
    attempts,
    unavailable: connection === "open" ? unavailable : null,
  };
}
