import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useNavigate } from "react-router-dom";
import { ApiError, fieldErrors, gpuBusy } from "../client/api";
import type { GpuBusyDetail, JobCreate } from "../client/types";
import { keys, useCreateJob } from "./queries";

/**
 * Submitting a new job: on success the page moves to it; a 409 becomes `conflict` (and asks for
 * a fresh recommendation through `refreshKey`), a 422 becomes messages by field.
 */
export function useJobSubmission() {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const create = useCreateJob();
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [conflict, setConflict] = useState<GpuBusyDetail | null>(null);
  const [refreshKey, setRefreshKey] = useState(0);

  const submit = (body: JobCreate) => {
    setConflict(null);
    setErrors({});
    create.mutate(body, {
      onSuccess: (job) => navigate(`/jobs/${job.id}`),
      onError: (error) => {
        if (!(error instanceof ApiError)) return;
        const busy = error.status === 409 ? gpuBusy(error.body) : null;
        if (busy) {
          setConflict(busy);
          setRefreshKey((k) => k + 1);
          void queryClient.invalidateQueries({ queryKey: keys.gpus });
        } else if (error.status === 422) setErrors(fieldErrors(error.body));
      },
    });
  };
  /** the user changed a field: the API's message about it no longer applies */
  const clearError = (key: string) => setErrors((e) => Object.fromEntries(Object.entries(e).filter(([k]) => k !== key)));

  const handled = create.error instanceof ApiError && (create.error.status === 422 || gpuBusy(create.error.body) !== null);
  return {
    submit,
    pending: create.isPending,
    errors,
    clearError,
    conflict,
    clearConflict: () => setConflict(null),
    refreshKey,
    /** an error the form does not show beside a field or as a conflict */
    otherError: create.error && !handled ? create.error.message : null,
  };
}
