/**
 * A job's settings (GET /api/jobs/{id}/settings: every config field, defaults marked, a sweep
 * member's parameters against its base) and the fields where jobs differ (GET /api/jobs/diff).
 * A job's config never changes after submit, so neither answer goes stale.
 */
import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../client/api";

export function useJobSettings(id: number | null) {
  return useQuery({
    queryKey: ["job", id, "settings"],
    queryFn: () => unwrap(api.GET("/api/jobs/{job_id}/settings", { params: { path: { job_id: id ?? 0 } } })),
    enabled: id !== null,
    staleTime: Infinity,
  });
}

/** The differing fields of 2 or more jobs, in the order given (the order is the columns'). */
export function useJobsDiff(ids: number[]) {
  return useQuery({
    queryKey: ["jobs-diff", ids],
    queryFn: () => unwrap(api.GET("/api/jobs/diff", { params: { query: { jobs: ids } } })),
    enabled: ids.length >= 2,
    staleTime: Infinity,
  });
}
