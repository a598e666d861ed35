import kinds from "./kindSchemas.json";
import type { Cluster } from "../client/clusterTypes";
import type { DeviceSample, Gpu, Job, JobKindInfo, NodeSample, Recommendation, Schemas } from "../client/types";

const GIB = 1024 ** 3;

export function makeGpu(overrides: Partial<Gpu> = {}): Gpu {
  const total = overrides.memory_total_bytes ?? 80 * GIB;
  const used = overrides.memory_used_bytes ?? 8 * GIB;
  return {
    node: "node-a",
    uuid: `SIM-${overrides.index ?? 0}`,
    index: 0,
    name: "Simulated H100",
    source: "simulated",
    memory_total_bytes: total,
    memory_used_bytes: used,
    memory_free_bytes: total - used,
    utilization_gpu_pct: 40,
    utilization_memory_pct: 10,
    temperature_c: 55,
    power_watts: 300,
    power_limit_watts: 700,
    sm_clock_mhz: 1980,
    processes: [],
    lost: false,
    held_by: null,
    external_processes: [],
    sampled_at: new Date().toISOString(),
    sample_age_s: 0,
    stale: false,
    last_seen_at: new Date().toISOString(),
    ...overrides,
  };
}

function reading(gpu: Gpu): DeviceSample {
  return {
    uuid: gpu.uuid,
    index: gpu.index,
    name: gpu.name,
    memory_total_bytes: gpu.memory_total_bytes,
    memory_used_bytes: gpu.memory_used_bytes,
    memory_free_bytes: gpu.memory_free_bytes,
    utilization_gpu_pct: gpu.utilization_gpu_pct,
    utilization_memory_pct: gpu.utilization_memory_pct,
    temperature_c: gpu.temperature_c,
    power_watts: gpu.power_watts,
    power_limit_watts: gpu.power_limit_watts,
    sm_clock_mhz: gpu.sm_clock_mhz,
    processes: [
      ...(gpu.processes ?? []),
      ...gpu.external_processes.map((p) => ({ pid: p.pid, used_memory_bytes: p.used_memory_bytes, managed: false, job_id: null })),
    ],
    lost: gpu.lost ?? false,
  };
}

/** One node's sample `seconds` after a fixed start, as WS /ws/telemetry sends it. */
export function makeSample(seconds: number, devices: Gpu[], node = "node-a"): NodeSample {
  return {
    node,
    source: "simulated",
    sampled_at: new Date(Date.UTC(2026, 0, 1, 0, 0, 0) + seconds * 1000).toISOString(),
    interval_s: 1,
    devices: devices.map(reading),
  };
}

export function makeJob(overrides: Partial<Job> = {}): Job {
  return {
    id: 7,
    name: "sae-test",
    kind: "sae",
    status: "running",
    config: { steps: 100, checkpoint_interval: 50 },
    owner: "local",
    node: "node-a",
    world_size: 2,
    devices: [
      { node: "node-a", uuid: "SIM-0", index: 0, rank: 0 },
      { node: "node-a", uuid: "SIM-1", index: 1, rank: 1 },
    ],
    progress: { step: 25, total: 100 },
    error: null,
    error_summary: null,
    failed_rank: null,
    resume_from_job_id: null,
    estimate_bytes_per_device: 1024 ** 2,
    peak_memory_bytes: null,
    rank_memory: null,
    advice: [],
    cancel_requested: false,
    created_at: new Date(Date.now() - 65_000).toISOString(),
    started_at: new Date(Date.now() - 60_000).toISOString(),
    finished_at: null,
    heartbeat_at: null,
    priority: 0,
    time_limit_s: 86400,
    depends_on: [],
    preemptible: false,
    held: false,
    queue: null,
    ...overrides,
  };
}

/** The `sae` kind as GET /api/kinds/sae describes it (its real schema and defaults, charts, headline metrics). */
export function makeSaeKind(): JobKindInfo {
  return {
    name: "sae",
    description: "sparse autoencoder",
    config_schema: kinds.sae.config_schema,
    defaults: kinds.sae.defaults,
    batch_size_field: "batch_size",
    steps_field: "steps",
    estimates_memory: true,
    searches_batch_size: true,
    charts: [
      { title: "Loss", log_y: true, series: [{ metric: "overall_loss", label: "overall" }] },
      { title: "L0 (active features per sample)", log_y: false, series: [{ metric: "l0", label: "L0" }] },
    ],
    summary_metrics: [
      { metric: "overall_loss", label: "loss" },
      { metric: "l0", label: "L0" },
    ],
    api_version: 2,
    available: true,
    unavailable_reason: null,
  };
}

/** A node of GET /api/nodes; `share_memory`: an admin allows sharing its devices by memory. */
export function makeNode(name = "node-a", share_memory = false): Schemas["NodePublic"] {
  return {
    name,
    address: null,
    online: true,
    source: "simulated",
    device_count: 1,
    registered_at: "2026-11-27T20:00:00Z",
    last_seen_at: "2026-11-27T20:00:00Z",
    share_memory,
    share_across_users: false,
    cuda_context_reserve_bytes: 0.5 * GIB,
  };
}

/** A connected Slurm cluster of GET /api/clusters: local access, two partitions. */
export function makeCluster(name: string, overrides: Partial<Cluster> = {}): Cluster {
  return {
    name,
    kind: "slurm",
    partitions: ["gpu", "gpu-long"],
    account: null,
    qos: null,
    shared_dir: "/scratch/gpudeck",
    access: "local",
    slurm_conf: null,
    python: null,
    gpu_memory: {},
    created_by: "root",
    created_at: "2026-11-27T10:00:00Z",
    ...overrides,
  };
}

/** POST /api/gpus/recommend's answer: nothing fits and sharing would not start it, unless overridden. */
export function makeRecommendation(overrides: Partial<Recommendation> = {}): Recommendation {
  return {
    devices: [],
    excluded: [],
    enough: false,
    message: "not enough devices: 0 of the 1 needed fit",
    share_bytes_per_device: 0,
    could_share: false,
    share_devices: [],
    share_message: null,
    ...overrides,
  };
}

/** A device as the recommender names it (devices, share_devices), from a board device. */
export function recommended(gpu: Gpu): Recommendation["devices"][number] {
  const { node, uuid, index, name, memory_total_bytes, reservation_room_bytes } = gpu;
  return { node, uuid, index, name, memory_total_bytes, memory_free_bytes: gpu.memory_free_bytes ?? null, reservation_room_bytes };
}
