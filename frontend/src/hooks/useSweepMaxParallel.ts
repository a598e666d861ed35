/** PATCH /api/sweeps/{id} {max_parallel}: change how many members may run at once while the sweep runs (issue 35). */
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, ApiError, fieldErrors, unwrap } from "../client/api";
import type { Sweep } from "../client/sweepTypes";
import { sweepKeys } from "./useSweeps";

/** The refusal to show at the control: the API's words on max_parallel (422), else its message (403, 404). */
export function maxParallelError(error: Error | null): string | null {
  if (!error) return null;
  if (error instanceof ApiError && error.status === 422) return fieldErrors(error.body)["max_parallel"] ?? error.message;
  return error.message;
}

/** The sweep's page shows the answer at once; the list (its max_parallel column) and the queue are read again. */
export function useSetMaxParallel(sweepId: number) {
  const client = useQueryClient();
  return useMutation<Sweep, Error, number>({
    mutationFn: (maxParallel: number) =>
      unwrap(api.PATCH("/api/sweeps/{sweep_id}", { params: { path: { sweep_id: sweepId } }, body: { max_parallel: maxParallel } })),
    onSuccess: (sweep) => {
      client.setQueryData(sweepKeys.one(sweepId), sweep);
      for (const key of [sweepKeys.all, ["queue"]]) void client.invalidateQueries({ queryKey: key });
    },
  });
}
