import { describe, expect, it } from "vitest";
import type { MetricPoint } from "../client/types";
import { makeJob, makeSaeKind } from "../test/fixtures";
import {
  alignRuns,
  compareUrl,
  configRows,
  figureRows,
  leadingFigures,
  metricOptions,
  numericSettings,
  parseJobIds,
  parseTags,
} from "./compare";

const at = (step: number, seconds: number, metrics: Record<string, number>, start = "2026-06-01T12:00:00Z"): MetricPoint => ({
  step,
  metrics,
  created_at: new Date(Date.parse(start) + seconds * 1000).toISOString(),
});

describe("compare", () => {
  it("reads the jobs from the URL it writes", () => {
    expect(parseJobIds("12,3, 7,3,x,0,-2")).toEqual([12, 3, 7]);
    expect(parseJobIds(null)).toEqual([]);
    expect(parseJobIds(compareUrl([4, 9]).split("=")[1]!)).toEqual([4, 9]);
  });

  it("lists every config field and marks the ones that differ", () => {
    const rows = configRows([
      { lr: 0.001, steps: 100, dataset: { type: "synthetic", n: 3 }, layers: [1, 2] },
      { lr: 0.003, steps: 100, dataset: { type: "hf", n: 3 }, layers: [1, 2], seed: 7 },
    ]);
    const differing = rows.filter((r) => r.differs).map((r) => r.path);
    expect(differing).toEqual(["lr", "dataset.type", "seed"]);
    expect(rows.find((r) => r.path === "seed")!.values).toEqual([null, "7"]);
    expect(rows.find((r) => r.path === "layers")).toEqual({ path: "layers", values: ["[1,2]", "[1,2]"], differs: false });
  });

  it("gives each kind's summary figures and the best job where the better way is plain", () => {
    const kind = {
      ...makeSaeKind(),
      summary_metrics: [
        ...makeSaeKind().summary_metrics,
        { metric: "explained_variance", label: "explained var." },
        { metric: "dead_pct", label: "dead %" },
      ],
    };
    const jobs = [
      makeJob({ id: 1, latest_metrics: { overall_loss: 0.5, l0: 30, explained_variance: 0.9, dead_pct: 0 } }),
      makeJob({ id: 2, latest_metrics: { overall_loss: 0.25, l0: 20, explained_variance: 0.8, dead_pct: 0 } }),
      makeJob({ id: 3, kind: "script", latest_metrics: {} }),
    ];
    const rows = figureRows(jobs, [kind]);
    expect(rows.map((r) => [r.label, r.values, r.best])).toEqual([
      ["loss", [0.5, 0.25, null], 1], // lower loss is better
      ["L0", [30, 20, null], null], // a trade-off: neither is marked
      ["explained var.", [0.9, 0.8, null], 0],
      ["dead %", [0, 0, null], null], // a tie: neither is marked
    ]);
    expect(leadingFigures(jobs[1]!, kind, 1)).toEqual([{ metric: "overall_loss", label: "loss", value: 0.25 }]);
    expect(leadingFigures(jobs[2]!, undefined)).toEqual([]);
  });

  it("offers the kinds' chart metrics that were reported, then any other", () => {
    const runs = [[at(1, 0, { overall_loss: 1, extra: 2 })], [at(1, 0, { l0: 3 })]];
    expect(metricOptions([makeSaeKind()], runs)).toEqual([
      { name: "overall_loss", label: "overall" },
      { name: "l0", label: "L0" },
      { name: "extra", label: "extra" },
    ]);
  });

  it("overlays runs by step or by time since each one's first report", () => {
    const a = [at(0, 0, { loss: 4 }), at(10, 5, { loss: 2 })];
    const b = [
      at(0, 0, { loss: 3 }, "2026-06-02T08:00:00Z"),
      at(20, 10, { other: 1 }, "2026-06-02T08:00:00Z"),
      at(30, 5, { loss: 1 }, "2026-06-02T08:00:00Z"),
    ];
    expect(alignRuns([a, b], "loss", "step")).toEqual([
      [0, 10, 30],
      [4, 2, null],
      [3, null, 1],
    ]);
    // started a day apart, both at 0 s and 5 s
    expect(alignRuns([a, b], "loss", "time")).toEqual([
      [0, 5],
      [4, 2],
      [3, 1],
    ]);
  });

  it("offers the differing numeric settings to draw a metric against", () => {
    const rows = configRows([
      { lr: 0.001, k: 8, name: "a", steps: 100, warm: 1 },
      { lr: 0.01, k: 16, name: "b", steps: 100 },
      { lr: 0.1, k: "auto", name: "c", steps: 100 },
    ]);
    // k is a number in two jobs and text in one: not a numeric axis; warm is set in one job only
    expect(numericSettings(rows)).toEqual([{ path: "lr", values: [0.001, 0.01, 0.1] }]);
  });

  it("reads typed tags", () => {
    expect(parseTags(" baseline, lr  baseline ")).toEqual(["baseline", "lr"]);
    expect(parseTags("")).toEqual([]);
  });
});
