/**
 * Telemetry kept outside React: the latest view of every device and a bounded history per
 * device (ring buffers), fed by WebSocket samples (readings) and GET /api/gpus (inventory and
 * holders, which samples do not carry). Components subscribe and read on render.
 */
import { deviceKey, type DeviceSample, type Gpu, type NodeSample } from "../client/types";
import { Ring } from "../lib/ring";

export interface Series {
  /** seconds since the epoch */
  t: Ring;
  utilPct: Ring;
  memPct: Ring;
  tempC: Ring;
  powerWatts: Ring;
}

export interface Aggregate {
  devices: number;
  memoryUsedBytes: number;
  memoryTotalBytes: number;
  meanUtilPct: number;
  maxTempC: number | null;
  powerWatts: number;
  busy: number;
}

function newSeries(capacity: number): Series {
  return {
    t: new Ring(capacity),
    utilPct: new Ring(capacity),
    memPct: new Ring(capacity),
    tempC: new Ring(capacity),
    powerWatts: new Ring(capacity),
  };
}

/** What GET /api/gpus knows and samples do not: the holder and the device's sharing. */
function fromInventory(device: Gpu): Pick<Gpu, "held_by" | "reservations" | "reservation_room_bytes" | "node_shares_memory"> {
  return {
    held_by: device.held_by,
    reservations: device.reservations ?? [],
    reservation_room_bytes: device.reservation_room_bytes ?? null,
    node_shares_memory: device.node_shares_memory ?? false,
  };
}

const nan = (v: number | null | undefined): number => (v === null || v === undefined ? NaN : v);

export class TelemetryStore {
  private readonly latest = new Map<string, Gpu>();
  private readonly inventory = new Map<string, Gpu>();
  private readonly nodeDevices = new Map<string, string[]>();
  private readonly history = new Map<string, Series>();
  private readonly aggregateHistory: Series;
  private readonly listeners = new Set<() => void>();
  private readonly nodeReceivedAt = new Map<string, number>();
  version = 0;

  constructor(readonly capacity = 600) {
    this.aggregateHistory = newSeries(capacity);
  }

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  getVersion = (): number => this.version;

  /** A `snapshot` replaces everything: it is the server's whole recent history. */
  loadSnapshot(history: readonly NodeSample[], receivedAt = Date.now()): void {
    this.latest.clear();
    this.nodeDevices.clear();
    this.history.clear();
    for (const ring of Object.values(this.aggregateHistory)) ring.clear();
    const ordered = [...history].sort((a, b) => Date.parse(a.sampled_at) - Date.parse(b.sampled_at));
    for (const sample of ordered) this.apply(sample, receivedAt);
    this.changed();
  }

  ingest(samples: NodeSample | readonly NodeSample[], receivedAt = Date.now()): void {
    for (const sample of Array.isArray(samples) ? samples : [samples]) this.apply(sample, receivedAt);
    this.changed();
  }

  /**
   * GET /api/gpus: who holds each device and which processes GPUDeck did not start. Devices no
   * sample has reported yet are shown from it too (their readings may be missing).
   */
  setInventory(devices: readonly Gpu[]): void {
    this.inventory.clear();
    for (const device of devices) {
      const key = deviceKey(device);
      this.inventory.set(key, device);
      const current = this.latest.get(key);
      this.latest.set(key, current ? { ...current, ...fromInventory(device), external_processes: device.external_processes } : device);
    }
    this.changed();
  }

  private view(sample: NodeSample, device: DeviceSample): Gpu {
    const key = deviceKey({ node: sample.node, uuid: device.uuid });
    const known = this.inventory.get(key) ?? this.latest.get(key);
    const processes = device.processes ?? [];
    return {
      node: sample.node,
      uuid: device.uuid,
      index: device.index,
      name: device.name,
      source: sample.source,
      memory_total_bytes: device.memory_total_bytes ?? known?.memory_total_bytes ?? 0,
      memory_used_bytes: device.memory_used_bytes ?? null,
      memory_free_bytes: device.memory_free_bytes ?? null,
      utilization_gpu_pct: device.utilization_gpu_pct ?? null,
      utilization_memory_pct: device.utilization_memory_pct ?? null,
      temperature_c: device.temperature_c ?? null,
      power_watts: device.power_watts ?? null,
      power_limit_watts: device.power_limit_watts ?? null,
      sm_clock_mhz: device.sm_clock_mhz ?? null,
      processes,
      lost: device.lost ?? false,
      held_by: known?.held_by ?? null,
      reservations: known?.reservations ?? [],
      reservation_room_bytes: known?.reservation_room_bytes ?? null,
      node_shares_memory: known?.node_shares_memory ?? false,
      external_processes: processes.filter((p) => !p.managed).map((p) => ({ pid: p.pid, used_memory_bytes: p.used_memory_bytes })),
      sampled_at: sample.sampled_at,
      sample_age_s: 0,
      stale: false,
      last_seen_at: sample.sampled_at,
    };
  }

  private apply(sample: NodeSample, receivedAt: number): void {
    const t = Date.parse(sample.sampled_at) / 1000;
    const keys: string[] = [];
    for (const reading of sample.devices) {
      const device = this.view(sample, reading);
      const key = deviceKey(device);
      keys.push(key);
      this.latest.set(key, device);
      let series = this.history.get(key);
      if (!series) {
        series = newSeries(this.capacity);
        this.history.set(key, series);
      }
      const last = series.t.last();
      if (last !== undefined && t <= last) continue; // replayed or out-of-order frame
      series.t.push(t);
      series.utilPct.push(nan(device.utilization_gpu_pct));
      series.memPct.push(
        device.memory_total_bytes > 0 && typeof device.memory_used_bytes === "number"
          ? (100 * device.memory_used_bytes) / device.memory_total_bytes
          : NaN,
      );
      series.tempC.push(nan(device.temperature_c));
      series.powerWatts.push(nan(device.power_watts));
    }
    for (const gone of this.nodeDevices.get(sample.node) ?? []) {
      if (!keys.includes(gone)) {
        this.latest.delete(gone);
        this.history.delete(gone);
      }
    }
    this.nodeDevices.set(sample.node, keys);
    this.nodeReceivedAt.set(sample.node, receivedAt);
    this.pushAggregate(t);
  }

  private pushAggregate(t: number): void {
    const agg = this.aggregate();
    const h = this.aggregateHistory;
    const last = h.t.last();
    if (last !== undefined && Math.floor(t) <= Math.floor(last)) return; // one point a second
    h.t.push(t);
    h.utilPct.push(agg.meanUtilPct);
    h.memPct.push(agg.memoryTotalBytes > 0 ? (100 * agg.memoryUsedBytes) / agg.memoryTotalBytes : NaN);
    h.tempC.push(agg.maxTempC ?? NaN);
    h.powerWatts.push(agg.powerWatts);
  }

  private changed(): void {
    this.version += 1;
    for (const listener of this.listeners) listener();
  }

  devices(): Gpu[] {
    return [...this.latest.values()].sort((a, b) => a.node.localeCompare(b.node) || a.index - b.index);
  }

  nodes(): string[] {
    return [...this.nodeDevices.keys()].sort();
  }

  device(key: string): Gpu | undefined {
    return this.latest.get(key);
  }

  series(key: string): Series | undefined {
    return this.history.get(key);
  }

  aggregateSeries(): Series {
    return this.aggregateHistory;
  }

  /** Most recent time (ms, client clock) any node was heard from, or null before the first. */
  lastReceivedAt(): number | null {
    let newest: number | null = null;
    for (const at of this.nodeReceivedAt.values()) newest = newest === null ? at : Math.max(newest, at);
    return newest;
  }

  /** Nodes whose last sample is older than `staleAfterMs`. */
  staleNodes(now: number, staleAfterMs: number): string[] {
    return [...this.nodeReceivedAt.entries()].filter(([, at]) => now - at > staleAfterMs).map(([node]) => node);
  }

  aggregate(): Aggregate {
    let used = 0;
    let total = 0;
    let util = 0;
    let utilCount = 0;
    let maxTemp: number | null = null;
    let power = 0;
    let busy = 0;
    for (const d of this.latest.values()) {
      used += d.memory_used_bytes ?? 0;
      total += d.memory_total_bytes;
      if (d.utilization_gpu_pct !== null && d.utilization_gpu_pct !== undefined) {
        util += d.utilization_gpu_pct;
        utilCount += 1;
      }
      if (d.temperature_c !== null && d.temperature_c !== undefined) maxTemp = Math.max(maxTemp ?? -Infinity, d.temperature_c);
      power += d.power_watts ?? 0;
      if (d.held_by || d.external_processes.length > 0) busy += 1;
    }
    return {
      devices: this.latest.size,
      memoryUsedBytes: used,
      memoryTotalBytes: total,
      meanUtilPct: utilCount > 0 ? util / utilCount : NaN,
      maxTempC: maxTemp,
      powerWatts: power,
      busy,
    };
  }
}
