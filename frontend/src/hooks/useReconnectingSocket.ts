/**
 * One WebSocket that stays connected: opened through openSocket (so it carries the bearer
 * token), reopened after every close with exponential backoff and jitter, the delays reset by
 * a connection that opened. Both live feeds (telemetry, one job) use it.
 */
import { useEffect, useRef, useState } from "react";
import { openSocket } from "../client/api";

export type ConnectionState = "connecting" | "open" | "closed";

export interface ReconnectOptions {
  /** first reconnect delay; each failed attempt doubles it */
  baseDelayMs?: number;
  /** the longest delay between attempts */
  maxDelayMs?: number;
  /** for tests: a WebSocket stand-in */
  WebSocketImpl?: typeof WebSocket;
}

export interface SocketState {
  connection: ConnectionState;
  /** reconnect attempts since the last successful open */
  attempts: number;
}

/** Delay before reconnect attempt `attempt` (0-based): base * 2^attempt, capped, with jitter. */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number, random = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** attempt);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * Keeps a socket to `path` open while `path` is not null, handing each text frame to
 * `onMessage` (the latest one passed: it need not be stable). A null path closes the socket
 * and stops reconnecting, as does unmounting.
 */
export function useReconnectingSocket(
  path: string | null,
  onMessage: (data: string) => void,
  { baseDelayMs = 500, maxDelayMs = 15000, WebSocketImpl }: ReconnectOptions = {},
): SocketState {
  const [connection, setConnection] = useState<ConnectionState>("connecting");
  const [attempts, setAttempts] = useState(0);
  const handler = useRef(onMessage);
  useEffect(() => {
    handler.current = onMessage;
  }, [onMessage]);

  useEffect(() => {
    if (path === null) return;
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
        if (typeof event.data === "string") handler.current(event.data);
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
  }, [path, baseDelayMs, maxDelayMs, WebSocketImpl]);

  return { connection: path === null ? "closed" : connection, attempts };
}
