/** Server state through TanStack Query: one key per resource, so invalidation is by key. */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap, unwrapText } from "../client/api";
import type { EstimateRequest, JobCreate, JobKind, JobStatus, RecommendStrategy, SaeConfig } from "../client/types";

export const keys = {
  gpus: ["gpus"] as const,
  jobs: (status: JobStatus | null, limit: number, offset: number) => ["jobs", { status, limit, offset }] as const,
  job: (id: number) => ["job", id] as const,
  metrics: (id: number) => ["job", id, "metrics"] as const,
  logs: (id: number, rank: number) => ["job", id, "logs", rank] as const,
  checkpoints: (id: number) => ["job", id, "checkpoints"] as const,
};

export function useGpus() {
  return useQuery({
    queryKey: keys.gpus,
    queryFn: () => unwrap(api.GET("/api/gpus")),
    refetchInterval: 3000,
  });
}

/** The sae kind's default config, so the form starts where the API does. */
export function useSaeDefaults() {
  return useQuery({
    queryKey: ["kinds", "sae", "defaults"],
    queryFn: () => unwrap(api.GET("/api/kinds/sae/defaults")),
    staleTime: Infinity,
  });
}

export function useJobs(status: JobStatus | null, limit = 50, offset = 0) {
  return useQuery({
    queryKey: keys.jobs(status, limit, offset),
    queryFn: () =>
      unwrap(api.GET("/api/jobs", { params: { query: { limit, offset, ...(status ? { status: [status] } : {}) } } })),
    refetchInterval: 2000,
  });
}

/** A rank's last `tail` lines of output (the API answers text/plain). */
export function useJobLogs(id: number, rank: number, tail = 200, live = true) {
  return useQuery({
    queryKey: keys.logs(id, rank),
    queryFn: () =>
      unwrapText(
        api.GET("/api/jobs/{job_id}/logs", {
          params: { path: { job_id: id }, query: { rank, tail } },
          parseAs: "text",
        }),
      ),
    refetchInterval: live ? 3000 : false,
  });
}

export function useCheckpoints(id: number, live = true) {
  return useQuery({
    queryKey: keys.checkpoints(id),
    queryFn: () => unwrap(api.GET("/api/jobs/{job_id}/checkpoints", { params: { path: { job_id: id } } })),
    refetchInterval: live ? 5000 : false,
  });
}

export function useEstimate(
  kind: JobKind,
  config: SaeConfig,
  worldSize: number,
  deviceType: NonNullable<EstimateRequest["device_type"]>,
  enabled: boolean,
) {
  return useQuery({
    queryKey: ["estimate", kind, config, worldSize, deviceType],
    queryFn: () =>
      unwrap(api.POST("/api/estimate", { body: { kind, config, world_size: worldSize, device_type: deviceType } })),
    enabled,
    retry: false,
    staleTime: 60_000,
    placeholderData: (previous) => previous,
  });
}

export function useRecommendation(
  bytesPerDevice: number | null,
  count: number,
  strategy: RecommendStrategy,
  refreshKey: number,
) {
  return useQuery({
    queryKey: ["recommend", bytesPerDevice, count, strategy, refreshKey],
    queryFn: () =>
      unwrap(api.POST("/api/gpus/recommend", { body: { bytes_per_device: bytesPerDevice ?? 0, count, strategy } })),
    enabled: bytesPerDevice !== null && count > 0,
    retry: false,
    placeholderData: (previous) => previous,
  });
}

export function useCreateJob() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: JobCreate) => unwrap(api.POST("/api/jobs", { body })),
    onSuccess: () => client.invalidateQueries({ queryKey: ["jobs"] }),
  });
}

export function useCancelJob(id: number) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => unwrap(api.POST("/api/jobs/{job_id}/cancel", { params: { path: { job_id: id } } })),
    onSuccess: (job) => {
      client.setQueryData(keys.job(id), job);
      void client.invalidateQueries({ queryKey: ["jobs"] });
    },
  });
}

export function useResumeJob(id: number) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => unwrap(api.POST("/api/jobs/{job_id}/resume", { params: { path: { job_id: id } }, body: {} })),
    onSuccess: () => client.invalidateQueries({ queryKey: ["jobs"] }),
  });
}
