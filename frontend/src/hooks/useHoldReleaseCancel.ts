/** Hold, release and cancel: of one job, or of every member of a sweep. */
import { useMutation, useQueryClient, type QueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap } from "../client/api";
import type { Sweep } from "../client/sweepTypes";
import type { Job } from "../client/types";
import { keys } from "./queries";
import { sweepKeys } from "./useSweeps";

export type HoldAction = "hold" | "release" | "cancel";
export interface ActionTarget {
  type: "job" | "sweep";
  id: number;
}

const JOB_PATHS = {
  hold: "/api/jobs/{job_id}/hold",
  release: "/api/jobs/{job_id}/release",
  cancel: "/api/jobs/{job_id}/cancel",
} as const;
const SWEEP_PATHS = {
  hold: "/api/sweeps/{sweep_id}/hold",
  release: "/api/sweeps/{sweep_id}/release",
  cancel: "/api/sweeps/{sweep_id}/cancel",
} as const;

/** POST /api/jobs/{id}/{action}; the job's page shows the answer, the queue and the jobs list are read again. */
export async function postJobAction(client: QueryClient, id: number, action: HoldAction): Promise<Job> {
  const job = await unwrap(api.POST(JOB_PATHS[action], { params: { path: { job_id: id } } }));
  client.setQueryData(keys.job(job.id), job);
  for (const key of [["queue"], ["jobs"]]) void client.invalidateQueries({ queryKey: key });
  return job;
}

/** POST /api/sweeps/{id}/{action} (every member); the sweep shows the answer, the lists are read again. */
async function postSweepAction(client: QueryClient, id: number, action: HoldAction): Promise<Sweep> {
  const sweep = await unwrap(api.POST(SWEEP_PATHS[action], { params: { path: { sweep_id: id } } }));
  client.setQueryData(sweepKeys.one(id), sweep);
  for (const key of [sweepKeys.all, ["jobs"], ["queue"]]) void client.invalidateQueries({ queryKey: key });
  return sweep;
}

/**
 * The hold, release and cancel buttons of a job's or a sweep's page: the action in flight, the
 * last one's error, and the confirmation a cancel waits for (it cannot be undone). `confirm`
 * spreads into a ConfirmButton.
 */
export function useHoldReleaseCancel(target: ActionTarget) {
  const client = useQueryClient();
  const [asking, setAsking] = useState(false);
  const mutation = useMutation<Job | Sweep, Error, HoldAction>({
    mutationFn: (action: HoldAction) =>
      target.type === "job" ? postJobAction(client, target.id, action) : postSweepAction(client, target.id, action),
  });
  return {
    hold: () => mutation.mutate("hold"),
    release: () => mutation.mutate("release"),
    /** for ConfirmButton's onConfirm: the user said yes */
    cancel: () => mutation.mutate("cancel"),
    confirm: { asking, onAsking: setAsking },
    /** the action in flight, or null */
    pending: mutation.isPending ? mutation.variables : null,
    /** the last action's failure: which one, and the API's message */
    error: mutation.error ? { action: mutation.variables, message: mutation.error.message } : null,
    /** the last action's answer: which one, and what the API said (a sweep's cancel: how many) */
    done: mutation.isSuccess ? { action: mutation.variables, answer: mutation.data } : null,
  };
}
