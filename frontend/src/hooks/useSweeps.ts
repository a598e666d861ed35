/** Sweeps through TanStack Query: the list, one sweep (polled until every member ended), create. */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "../client/api";
import type { Sweep, SweepCreate, SweepParameters } from "../client/sweepTypes";
import { isTerminal, type JobStatus } from "../client/types";

export const sweepKeys = {
  all: ["sweeps"] as const,
  one: (id: number) => ["sweeps", id] as const,
  analysis: (id: number, metric: string, better: string) => ["sweeps", id, "analysis", metric, better] as const,
};

/** Whether every member has ended (nothing left to poll for). */
export function sweepEnded(sweep: Pick<Sweep, "members">): boolean {
  return sweep.members.every((m) => isTerminal(m.status as JobStatus));
}

export function useSweeps(intervalMs = 3000) {
  return useQuery({
    queryKey: sweepKeys.all,
    queryFn: () => unwrap(api.GET("/api/sweeps", { params: { query: { limit: 200 } } })),
    refetchInterval: intervalMs,
  });
}

/** One sweep with its members; re-read every `intervalMs` while any member has not ended. */
export function useSweep(id: number | null, intervalMs: number | false = 2000) {
  return useQuery({
    queryKey: sweepKeys.one(id ?? 0),
    queryFn: () => unwrap(api.GET("/api/sweeps/{sweep_id}", { params: { path: { sweep_id: id ?? 0 } } })),
    enabled: id !== null,
    refetchInterval: (query) => (intervalMs !== false && query.state.data && !sweepEnded(query.state.data) ? intervalMs : false),
  });
}

export function useCreateSweep() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: SweepCreate) => unwrap(api.POST("/api/sweeps", { body })),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: sweepKeys.all });
      void client.invalidateQueries({ queryKey: ["jobs"] });
    },
  });
}

/**
 * A metric against every swept parameter (GET /api/sweeps/{id}/analysis): the best member, each
 * parameter's rank correlation, the edge callouts. Re-read with the sweep: `version` changes as
 * its members report (their newest figures), so the answer follows a running sweep.
 */
export function useSweepAnalysis(id: number, metric: string, better: "min" | "max", version: string) {
  return useQuery({
    queryKey: [...sweepKeys.analysis(id, metric, better), version],
    queryFn: () => unwrap(api.GET("/api/sweeps/{sweep_id}/analysis", { params: { path: { sweep_id: id }, query: { metric, better } } })),
    enabled: metric !== "",
    placeholderData: (previous) => previous,
    retry: false,
  });
}

/**
 * The values a random sweep would draw (POST /api/sweeps/draws: the sweep's own seeded draws,
 * nothing created), while `enabled`: the form previews them before launch.
 */
export function useSweepDraws(parameters: SweepParameters, enabled: boolean) {
  return useQuery({
    queryKey: ["sweeps", "draws", JSON.stringify(parameters)],
    queryFn: () => unwrap(api.POST("/api/sweeps/draws", { body: parameters })),
    enabled,
    staleTime: Infinity, // the same parameters always draw the same values
    placeholderData: (previous) => previous,
    retry: false,
  });
}
