/**
 * Names the rest of the app uses for the API's types. Every one is taken from the generated
 * schema: when the backend renames a model, this is the only file to touch.
 */
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];

/** One device as the dashboard shows it: inventory, holder, and the newest readings. */
export type Gpu = Schemas["GpuPublic"];
/** One node's sample from WS /ws/telemetry (and GET /api/gpus/history). */
export type NodeSample = Schemas["NodeSample"];
export type DeviceSample = Schemas["DeviceSample"];
export type TelemetryHistory = Schemas["TelemetryHistory"];
export type User = Schemas["UserPublic"];
export type Job = Schemas["JobPublic"];
/** A map job's progress per rank (GET /api/jobs/{id}/map-progress). */
export type MapProgress = Schemas["MapProgressPublic"];
export type DataChoice = Schemas["DataChoicePublic"];
export type JobStatus = Schemas["JobStatus"];
export type JobCreate = Schemas["JobCreate"];
export type JobKind = string;
/** A kind's config as the form builds it; the API validates it against the kind's schema. */
export type KindConfig = Record<string, unknown>;
export type JobKindInfo = Schemas["JobKindPublic"];
export type DeviceRef = Schemas["DeviceRef"];
export type MetricPoint = Schemas["MetricPoint"];
export type Metrics = Schemas["MetricsPublic"];
/** The sae kind reports mse_loss, overall_loss, l0, explained_variance, dead_features and dead_pct (the training window), activations_per_s and its architecture's loss (l1_loss, l0_loss or auxk_loss; mmcs and features_recovered_pct with synthetic data); at checkpoints heldout_dead_pct, heldout_l0 and heldout_explained_variance (held-out rows). */
export type MetricValues = MetricPoint["metrics"];
export type Checkpoint = Schemas["CheckpointPublic"];
export type Estimate = Schemas["EstimatePublic"];
export type EstimateRequest = Schemas["EstimateRequest"];
export type Recommendation = Schemas["RecommendationPublic"];
export type RecommendStrategy = NonNullable<Schemas["RecommendRequest"]["strategy"]>;
export type ExcludedDevice = Schemas["ExcludedDevice"];
/** An entry of a 409 gpu_busy body's `busy` list (not in the OpenAPI document: ErrorDetail's extras). */
export interface BusyDevice {
  node: string;
  uuid: string;
  index: number;
  held_by_job_id: number | null;
  reason: string;
}
export type ErrorDetail = Schemas["ErrorDetail"];
/** A 409 `gpu_busy` body's detail: ErrorDetail plus the devices and who holds them. */
export type GpuBusyDetail = ErrorDetail & { code: "gpu_busy"; busy: BusyDevice[] };
export type ValidationIssue = Schemas["ValidationError"];
export type CheckpointFile = Schemas["CheckpointFilePublic"];
export type JobResume = Schemas["JobResume"];
export type JobSegment = Schemas["JobSegmentPublic"];

/** Where a waiting job stands: JobPublic.queue, set while the job is queued. */
export type QueueInfo = Schemas["QueueInfo"];
export type QueueReasonCode = QueueInfo["reason_code"];
/** A job with the scheduler's fields (every JobPublic has them). */
export type ScheduledJob = Job;
/** The scheduling fields of a submit body. */
export type SchedulingCreate = Partial<Pick<JobCreate, "queue" | "priority" | "time_limit_s" | "depends_on" | "preemptible" | "hold">>;
export type QueuePage = Schemas["QueuePublic"];

export type ApiPaths = paths;

export const TERMINAL_STATUSES: readonly JobStatus[] = ["succeeded", "failed", "cancelled", "lost", "timeout", "stopped_early"];
export const ALL_STATUSES: readonly JobStatus[] = [
  "queued",
  "starting",
  "running",
  "succeeded",
  "failed",
  "cancelled",
  "lost",
  "timeout",
  "stopped_early",
];

export function isTerminal(status: JobStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/** `node/uuid`: a device's identity across the app (DESIGN: a device is (node, uuid)). */
export function deviceKey(device: { node?: string | null; uuid?: string | null }): string {
  return `${device.node ?? ""}/${device.uuid ?? ""}`;
}
