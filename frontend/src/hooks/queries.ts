/** Server state through TanStack Query: one key per resource, so invalidation is by key. */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, isForbidden, unwrap, unwrapText } from "../client/api";
import type { EstimateRequest, JobCreate, JobKind, JobStatus, RecommendStrategy, KindConfig } from "../client/types";

export const keys = {
  gpus: ["gpus"] as const,
  jobs: (status: JobStatus | null, limit: number, offset: number) => ["jobs", { status, limit, offset }] as const,
  job: (id: number) => ["job", id] as const,
  metrics: (id: number) => ["job", id, "metrics"] as const,
  logs: (id: number, rank: number) => ["job", id, "logs", rank] as const,
  checkpoints: (id: number) => ["job", id, "checkpoints"] as const,
  mapProgress: (id: number) => ["job", id, "map-progress"] as const,
};

/**
 * A job's owner-only reads (logs, metrics, checkpoints...): a 403 is the answer for another
 * user's job, not a failure to retry, and polling stops there.
 */
export const ownerOnly = {
  retry: (failures: number, error: Error) => !isForbidden(error) && failures < 3,
};

/** Poll every `ms` (false: not at all) until the answer is a 403. */
export function pollUnlessForbidden(ms: number | false) {
  return (query: { state: { error: unknown } }) => (isForbidden(query.state.error) ? false : ms);
}

export function useGpus() {
  return useQuery({
    queryKey: keys.gpus,
    queryFn: () => unwrap(api.GET("/api/gpus")),
    refetchInterval: 3000,
  });
}

/** Each node with its address and health (`online`: its sampler reported lately). */
export function useNodes() {
  return useQuery({
    queryKey: ["nodes"],
    queryFn: () => unwrap(api.GET("/api/nodes")),
    refetchInterval: 10000,
  });
}

/** Every registered kind (built in or installed with pip): the new-job page offers these. */
export function useKinds() {
  return useQuery({
    queryKey: ["kinds"],
    queryFn: () => unwrap(api.GET("/api/kinds")),
    staleTime: Infinity,
  });
}

/** A registered kind: its config schema and defaults (the form starts where the API does), charts. */
export function useKind(name: string) {
  return useQuery({
    queryKey: ["kinds", name],
    queryFn: () => unwrap(api.GET("/api/kinds/{kind_name}", { params: { path: { kind_name: name } } })),
    enabled: name !== "",
    staleTime: Infinity,
  });
}

export function useJobs(status: JobStatus | null, limit = 50, offset = 0) {
  return useQuery({
    queryKey: keys.jobs(status, limit, offset),
    queryFn: () => unwrap(api.GET("/api/jobs", { params: { query: { limit, offset, ...(status ? { status: [status] } : {}) } } })),
    refetchInterval: 2000,
  });
}

/** One job, read once (the job page follows a live one with useJob). */
export function useJobById(id: number | null) {
  return useQuery({
    queryKey: keys.job(id ?? 0),
    queryFn: () => unwrap(api.GET("/api/jobs/{job_id}", { params: { path: { job_id: id ?? 0 } } })),
    enabled: id !== null,
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
    refetchInterval: pollUnlessForbidden(live ? 3000 : false),
    ...ownerOnly,
  });
}

/** The metrics of a finished job, fetched once: the job a resumed job continues, an evaluation
 * listed on its source's page. */
export function useFinishedMetrics(parentId: number | null) {
  return useQuery({
    queryKey: ["job", parentId, "metrics", "all"],
    queryFn: async () => (await unwrap(api.GET("/api/jobs/{job_id}/metrics", { params: { path: { job_id: parentId ?? 0 } } }))).items,
    enabled: parentId !== null,
    staleTime: Infinity,
    ...ownerOnly,
  });
}

/** A preemptible job's stretches on devices (each preemption starts a new one). */
export function useSegments(id: number, enabled: boolean, live: boolean) {
  return useQuery({
    queryKey: ["job", id, "segments"],
    queryFn: () => unwrap(api.GET("/api/jobs/{job_id}/segments", { params: { path: { job_id: id } } })),
    enabled,
    refetchInterval: pollUnlessForbidden(live ? 5000 : false),
    ...ownerOnly,
  });
}

/** A map job's progress per rank (from its chunk events); polled while the job runs. */
export function useMapProgress(id: number, enabled: boolean, live: boolean) {
  return useQuery({
    queryKey: keys.mapProgress(id),
    queryFn: () => unwrap(api.GET("/api/jobs/{job_id}/map-progress", { params: { path: { job_id: id } } })),
    enabled,
    refetchInterval: pollUnlessForbidden(live ? 2000 : false),
    ...ownerOnly,
  });
}

/**
 * The job that can follow `id` on its output ("train an SAE on this output", "evaluate a
 * checkpoint"), prefilled. The API decides whether one is offered (a 404 or 409 says none):
 * an answer, not a failure to retry.
 */
export function useFollowUp(id: number | null) {
  return useQuery({
    queryKey: ["job", id, "follow-up"],
    queryFn: () => unwrap(api.GET("/api/jobs/{job_id}/follow-up", { params: { path: { job_id: id ?? 0 } } })),
    enabled: id !== null,
    retry: false,
  });
}

/** The jobs that name `id` as their source (an SAE job's evaluations), newest first. */
export function useFollowUps(id: number, enabled: boolean, live: boolean) {
  return useQuery({
    queryKey: ["job", id, "follow-ups"],
    queryFn: () => unwrap(api.GET("/api/jobs/{job_id}/follow-ups", { params: { path: { job_id: id } } })),
    enabled,
    refetchInterval: pollUnlessForbidden(live ? 5000 : false),
    ...ownerOnly,
  });
}

export function useCheckpoints(id: number, live = true, enabled = true) {
  return useQuery({
    queryKey: keys.checkpoints(id),
    queryFn: () => unwrap(api.GET("/api/jobs/{job_id}/checkpoints", { params: { path: { job_id: id } } })),
    enabled,
    refetchInterval: pollUnlessForbidden(live ? 5000 : false),
    ...ownerOnly,
  });
}

export function useEstimate(
  kind: JobKind,
  config: KindConfig,
  worldSize: number,
  deviceType: NonNullable<EstimateRequest["device_type"]>,
  enabled: boolean,
) {
  return useQuery({
    queryKey: ["estimate", kind, config, worldSize, deviceType],
    queryFn: () => unwrap(api.POST("/api/estimate", { body: { kind, config, world_size: worldSize, device_type: deviceType } })),
    enabled,
    retry: false,
    staleTime: 60_000,
    // the previous answer stands in while a field changes, never another kind's
    placeholderData: (previous, query) => (query?.queryKey[1] === kind ? previous : undefined),
  });
}

export function useRecommendation(bytesPerDevice: number | null, count: number, strategy: RecommendStrategy, refreshKey: number) {
  return useQuery({
    queryKey: ["recommend", bytesPerDevice, count, strategy, refreshKey],
    queryFn: () => unwrap(api.POST("/api/gpus/recommend", { body: { bytes_per_device: bytesPerDevice ?? 0, count, strategy } })),
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

export function useResumeJob(id: number) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => unwrap(api.POST("/api/jobs/{job_id}/resume", { params: { path: { job_id: id } }, body: {} })),
    onSuccess: () => client.invalidateQueries({ queryKey: ["jobs"] }),
  });
}

/** What a field marked `x-choices` may pick from the data directory ("models", "datasets"). */
export function useChoices(source: string) {
  return useQuery({
    queryKey: ["choices", source],
    // a kind may name any source; the API answers 422 for one it does not know
    queryFn: () => unwrap(api.GET("/api/choices/{source}", { params: { path: { source: source as "models" | "datasets" } } })),
    staleTime: 15000,
  });
}
