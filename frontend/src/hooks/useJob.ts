/**
 * One job, live: GET /api/jobs/{id} and its metrics through TanStack Query, kept current by
 * WS /ws/jobs/{id} (a snapshot, then status, progress, metrics and checkpoint events; the shared
 * reconnecting socket), with polling as the fallback while the socket is down.
 */
import { useQuery, useQueryClient, type QueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useRef } from "react";
import { api, isForbidden, unwrap } from "../client/api";
import { isTerminal, type Job, type MetricPoint } from "../client/types";
import { keys, ownerOnly } from "./queries";
import { useReconnectingSocket } from "./useReconnectingSocket";

/** Frames of WS /ws/jobs/{id}: a snapshot, then events as the ranks publish them. */
export type JobFrame =
  | { type: "snapshot"; job: Job; metrics: { step: number; metrics: MetricPoint["metrics"] }[] }
  | { type: "metrics"; rank: number; ts: number; data: { step: number; metrics: MetricPoint["metrics"] } }
  | { type: "progress"; rank: number; ts: number; data: { step: number; total: number | null } }
  | { type: "status" | "error" | "checkpoint" | "log" | "peak_memory"; rank: number; ts: number; data: Record<string, unknown> }
  | { type: "dropped"; count: number };

function appendPoints(points: MetricPoint[] | undefined, more: MetricPoint[]): MetricPoint[] {
  const current = points ?? [];
  const last = current[current.length - 1]?.step ?? -1;
  const fresh = more.filter((p) => p.step > last);
  return fresh.length > 0 ? [...current, ...fresh] : current;
}

/** Folds one frame into the query cache. */
export function applyFrame(client: QueryClient, id: number, frame: JobFrame): void {
  switch (frame.type) {
    case "snapshot": {
      client.setQueryData(keys.job(id), frame.job);
      const at = new Date().toISOString();
      client.setQueryData<MetricPoint[]>(keys.metrics(id), (points) =>
        appendPoints(
          points,
          frame.metrics.map((m) => ({ step: m.step, metrics: m.metrics, created_at: at })),
        ),
      );
      return;
    }
    case "progress":
      client.setQueryData<Job>(keys.job(id), (job) => job && { ...job, progress: { step: frame.data.step, total: frame.data.total } });
      return;
    case "metrics": {
      const point = { step: frame.data.step, metrics: frame.data.metrics, created_at: new Date(frame.ts * 1000).toISOString() };
      client.setQueryData<MetricPoint[]>(keys.metrics(id), (points) => appendPoints(points, [point]));
      return;
    }
    case "status":
    case "error":
      void client.invalidateQueries({ queryKey: keys.job(id), exact: true });
      void client.invalidateQueries({ queryKey: ["jobs"] });
      return;
    case "checkpoint":
      void client.invalidateQueries({ queryKey: keys.checkpoints(id) });
      return;
    default:
      return;
  }
}

/** Metrics newer than what the cache holds (after_step), appended to it. */
async function fetchMetrics(client: QueryClient, id: number): Promise<MetricPoint[]> {
  const points = client.getQueryData<MetricPoint[]>(keys.metrics(id));
  const last = points?.[points.length - 1]?.step;
  const page = await unwrap(
    api.GET("/api/jobs/{job_id}/metrics", {
      params: { path: { job_id: id }, query: last === undefined ? {} : { after_step: last } },
    }),
  );
  return appendPoints(points, page.items);
}

export function useJob(id: number, WebSocketImpl?: typeof WebSocket) {
  const client = useQueryClient();
  // whether the socket is open, for the poll interval: the socket needs the job's status first
  const live = useRef(false);
  const job = useQuery({
    queryKey: keys.job(id),
    queryFn: () => unwrap(api.GET("/api/jobs/{job_id}", { params: { path: { job_id: id } } })),
    refetchInterval: (query) => (query.state.data && isTerminal(query.state.data.status) ? false : live.current ? 10000 : 2000),
  });
  const terminal = job.data ? isTerminal(job.data.status) : false;
  const onMessage = useCallback(
    (raw: string) => {
      try {
        applyFrame(client, id, JSON.parse(raw) as JobFrame);
      } catch {
        /* a frame we cannot read */
      }
    },
    [client, id],
  );
  // Another user's job: its metrics and its feed are its owner's; the first 403 says so (this
  // component re-renders when the metrics query fails, and reads its state here)
  const forbidden = isForbidden(client.getQueryState(keys.metrics(id))?.error);
  // a finished job sends nothing more: its socket closes and stays closed
  const socket = useReconnectingSocket(terminal || forbidden ? null : `/ws/jobs/${id}`, onMessage, { maxDelayMs: 10000, WebSocketImpl });
  const connected = socket.connection === "open";
  useEffect(() => {
    live.current = connected;
  }, [connected]);
  // the final checkpoint, the last log lines and a map job's last chunks land as the job ends,
  // after the last poll: read them again then
  useEffect(() => {
    if (!terminal) return;
    void client.invalidateQueries({ queryKey: keys.checkpoints(id) });
    void client.invalidateQueries({ queryKey: ["job", id, "logs"] });
    void client.invalidateQueries({ queryKey: keys.mapProgress(id) });
  }, [terminal, client, id]);
  const metrics = useQuery({
    queryKey: keys.metrics(id),
    queryFn: () => fetchMetrics(client, id),
    refetchInterval: terminal || connected || forbidden ? false : 3000,
    ...ownerOnly,
  });

  return { job, metrics, connected, forbidden: forbidden || isForbidden(metrics.error) };
}
