/** The scheduler's queue through TanStack Query: the waiting jobs, and hold/release/cancel. */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { api, unwrap } from "../client/api";
import type { Job } from "../client/types";
import { keys } from "./queries";

export const queueKey = ["queue"] as const;

/** Waiting jobs in scheduling order; polled, since positions and reasons change with every pass. */
export function useQueue(owner: string | null = null, intervalMs = 2000) {
  return useQuery({
    queryKey: [...queueKey, { owner }],
    queryFn: () => unwrap(api.GET("/api/queue", { params: { query: owner ? { owner } : {} } })),
    refetchInterval: intervalMs,
  });
}

export type QueueAction = "hold" | "release" | "cancel";

function act(id: number, action: QueueAction) {
  const params = { params: { path: { job_id: id } } };
  if (action === "hold") return unwrap(api.POST("/api/jobs/{job_id}/hold", params));
  if (action === "release") return unwrap(api.POST("/api/jobs/{job_id}/release", params));
  return unwrap(api.POST("/api/jobs/{job_id}/cancel", params));
}

/** Hold, release or cancel a job; the queue, the job and the jobs list refresh after. */
export function useQueueAction() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ id, action }: { id: number; action: QueueAction }) => act(id, action),
    onSuccess: (job: Job) => {
      client.setQueryData(keys.job(job.id), job);
      void client.invalidateQueries({ queryKey: queueKey });
      void client.invalidateQueries({ queryKey: ["jobs"] });
    },
  });
}

/**
 * A queued job's page: its place and reason change with every scheduling pass, which the job
 * feed does not announce, so the job is re-read every few seconds while it waits.
 */
export function useWaitingJobRefresh(job: Job, intervalMs = 3000): void {
  const client = useQueryClient();
  const waiting = job.status === "queued";
  useEffect(() => {
    if (!waiting) return;
    const timer = setInterval(() => void client.invalidateQueries({ queryKey: keys.job(job.id), exact: true }), intervalMs);
    return () => clearInterval(timer);
  }, [client, job.id, waiting, intervalMs]);
}
