/** The scheduler's queue through TanStack Query: the waiting jobs, and hold/release/cancel of its rows. */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { api, unwrap } from "../client/api";
import type { Job } from "../client/types";
import { keys } from "./queries";
import { postJobAction, type HoldAction } from "./useHoldReleaseCancel";

export const queueKey = ["queue"] as const;

/** Waiting jobs in scheduling order; polled, since positions and reasons change with every pass. */
export function useQueue(owner: string | null = null, intervalMs = 2000) {
  return useQuery({
    queryKey: [...queueKey, { owner }],
    queryFn: () => unwrap(api.GET("/api/queue", { params: { query: owner ? { owner } : {} } })),
    refetchInterval: intervalMs,
  });
}

/** Hold, release or cancel any job (a Queue row's); the queue, the job and the jobs list refresh after. */
export function useQueueAction() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ id, action }: { id: number; action: HoldAction }) => postJobAction(client, id, action),
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
