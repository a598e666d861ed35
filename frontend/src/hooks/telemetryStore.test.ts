import { describe, expect, it } from "vitest";
import { makeGpu, makeSample } from "../test/fixtures";
import { TelemetryStore } from "./telemetryStore";

describe("TelemetryStore", () => {
  it("keeps the latest reading and a bounded history per device", () => {
    const store = new TelemetryStore(5);
    for (let s = 0; s < 12; s += 1) store.ingest(makeSample(s, [makeGpu({ utilization_gpu_pct: s })]));
    expect(store.devices()).toHaveLength(1);
    expect(store.devices()[0]?.utilization_gpu_pct).toBe(11);
    const series = store.series("node-a/SIM-0");
    expect(series?.utilPct.toArray()).toEqual([7, 8, 9, 10, 11]);
    expect(store.aggregateSeries().t.size).toBe(5);
  });

  it("ignores replayed samples and replaces everything on a snapshot", () => {
    const store = new TelemetryStore(10);
    store.ingest(makeSample(5, [makeGpu()]));
    store.ingest(makeSample(4, [makeGpu()]));
    expect(store.series("node-a/SIM-0")?.t.size).toBe(1);
    store.loadSnapshot([makeSample(1, [makeGpu()]), makeSample(0, [makeGpu()])]);
    expect(store.series("node-a/SIM-0")?.t.size).toBe(2);
  });

  it("aggregates across nodes and drops devices a node no longer reports", () => {
    const store = new TelemetryStore(10);
    store.ingest(makeSample(0, [makeGpu({ index: 0, uuid: "A0" }), makeGpu({ index: 1, uuid: "A1" })]));
    store.setInventory([makeGpu({ index: 1, uuid: "A1", held_by: { job_id: 1, job_name: "x", owner: "me" } })]);
    store.ingest(makeSample(0, [makeGpu({ node: "node-b", uuid: "B0", utilization_gpu_pct: 100 })], "node-b"));
    expect(store.nodes()).toEqual(["node-a", "node-b"]);
    const agg = store.aggregate();
    expect(agg.devices).toBe(3);
    expect(agg.busy).toBe(1);
    expect(agg.meanUtilPct).toBeCloseTo(60);
    store.ingest(makeSample(1, [makeGpu({ index: 0, uuid: "A0" })]));
    expect(store.devices().map((d) => d.uuid)).toEqual(["A0", "B0"]);
  });

  it("keeps holders from the inventory across samples, and external processes from samples", () => {
    const store = new TelemetryStore(10);
    store.setInventory([makeGpu({ uuid: "A", held_by: { job_id: 4, job_name: "j", owner: "me" } })]);
    store.ingest(makeSample(0, [makeGpu({ uuid: "A", external_processes: [{ pid: 99, used_memory_bytes: 5 }] })]));
    const [device] = store.devices();
    expect(device?.held_by?.job_id).toBe(4);
    expect(device?.external_processes).toEqual([{ pid: 99, used_memory_bytes: 5 }]);
  });

  it("reports stale nodes", () => {
    const store = new TelemetryStore(10);
    store.ingest(makeSample(0, [makeGpu()]), 1000);
    expect(store.staleNodes(3000, 5000)).toEqual([]);
    expect(store.staleNodes(7000, 5000)).toEqual(["node-a"]);
  });
});
