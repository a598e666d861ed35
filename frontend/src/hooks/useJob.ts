/**
 * One job, live: GET /api/jobs/{id} and its metrics through TanStack Query, kept current by
 * WS /ws/jobs/{id} (status, progress, metrics and log messages), with polling as the fallback.
 */
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { api, openSocket, unwrap } from "../client/api";
import { isTerminal, type Job, type MetricPoint } from "../client/types";
import { keys } from "./queries";

export type JobMessage =
  | { type: "status"; status: Job["status"]; error?: string | null; job?: Job }
  | { type: "progress"; step: number; total: number }
  | ({ type: "metrics" } & MetricPoint)
  | { type: "log"; rank: number; line: string; created_at?: string }
  | { type: "job"; job: Job };

/** Folds one WS message into the query cache (log lines are read by polling the tail). */
export function applyMessage(client: ReturnType<typeof useQueryClient>, id: number, message: JobMessage): void {
  switch (message.type) {
    case "job":
      client.setQueryData(keys.job(id), message.job);
      return;
    case "status":
      if (message.job) client.setQueryData(keys.job(id), message.job);
      else client.setQueryData<Job>(keys.job(id), (job) => job && { ...job, status: message.status, error: message.error ?? job.error });
      if (isTerminal(message.status)) {
        void client.invalidateQueries({ queryKey: keys.job(id) });
        void client.invalidateQueries({ queryKey: keys.checkpoints(id) });
      }
      return;
    case "progress":
      client.setQueryData<Job>(keys.job(id), (job) => job && { ...job, progress: { step: message.step, total: message.total } });
      return;
    case "metrics": {
      const point: MetricPoint = { step: message.step, metrics: message.metrics, created_at: message.created_at };
      client.setQueryData<MetricPoint[]>(keys.metrics(id), (points = []) =>
        points.length > 0 && (points[points.length - 1]?.step ?? -1) >= point.step ? points : [...points, point],
      );
      return;
    }
    default:
      return;
  }
}

export function useJob(id: number, WebSocketImpl?: typeof WebSocket) {
  const client = useQueryClient();
  const job = useQuery({
    queryKey: keys.job(id),
    queryFn: () => unwrap(api.GET("/api/jobs/{job_id}", { params: { path: { job_id: id } } })),
    refetchInterval: (query) => (query.state.data && isTerminal(query.state.data.status) ? false : 3000),
  });
  const metrics = useQuery({
    queryKey: keys.metrics(id),
    queryFn: () => unwrap(api.GET("/api/jobs/{job_id}/metrics", { params: { path: { job_id: id } } })),
    refetchInterval: (query) => {
      const current = client.getQueryData<Job>(keys.job(id));
      return current && isTerminal(current.status) && query.state.dataUpdateCount > 1 ? false : 5000;
    },
  });
  const [connected, setConnected] = useState(false);
  const terminal = job.data ? isTerminal(job.data.status) : false;

  useEffect(() => {
    if (terminal) return;
    const Impl = WebSocketImpl ?? WebSocket;
    let socket: WebSocket | null = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let disposed = false;
    let attempt = 0;
    const connect = () => {
      socket = openSocket(`/ws/jobs/${id}`, Impl);
      socket.onopen = () => {
        attempt = 0;
        setConnected(true);
      };
      socket.onmessage = (event: MessageEvent) => {
        let message: JobMessage;
        try {
          message = JSON.parse(String(event.data)) as JobMessage;
        } catch {
          return;
        }
        applyMessage(client, id, message);
      };
      socket.onclose = () => {
        setConnected(false);
        if (disposed) return;
        timer = setTimeout(connect, Math.min(10000, 500 * 2 ** attempt++));
      };
      socket.onerror = () => socket?.close();
    };
    connect();
    return () => {
      disposed = true;
      clearTimeout(timer);
      if (socket) {
        socket.onclose = null;
        socket.close();
      }
    };
  }, [client, id, terminal, WebSocketImpl]);

  return { job, metrics, connected };
}
