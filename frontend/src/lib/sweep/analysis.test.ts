import { describe, expect, it } from "vitest";
import { makeSweep } from "../../test/sweepFixtures";
import { defaultAxes, defaultMetric, reportedMetrics, varyingMetrics } from "./axes";
import { parallelCoordinates } from "./parallel";
import { kneeOf, paretoFrontier } from "./pareto";
import { axisOf, logAxisOf, spansDecades, toPixel } from "./scale";

const HELD_OUT = [{ name: "l0" }, { name: "explained_variance" }, { name: "heldout_l0" }, { name: "heldout_explained_variance" }];

describe("a sweep read against its settings", () => {
  it("puts values spanning decades on a log axis: 1e-4 to 1e-1 evenly spaced, ticks at 1, 2, 5 per decade", () => {
    expect(spansDecades([1e-4, 3e-3, 1e-1])).toBe(true);
    expect(spansDecades([2, 4, 8, 16])).toBe(false);
    expect(spansDecades([0, 1, 100])).toBe(false); // a zero has no logarithm
    const axis = logAxisOf([1e-4, 1e-3, 1e-2, 1e-1]);
    expect(axis.log).toBe(true);
    const px = [1e-4, 1e-3, 1e-2, 1e-1].map((v) => toPixel(axis, v, 0, 300));
    expect(px[1]! - px[0]!).toBeCloseTo(px[3]! - px[2]!, 6); // a decade is a decade wherever it is
    expect(axis.ticks).toContain(0.001);
    expect(axis.ticks.every((t) => t >= axis.min && t <= axis.max)).toBe(true);
    expect(axisOf([1, 2]).log).toBeUndefined();
  });

  it("marks the frontier's knee where its bend is sharpest, and none for a straight or short frontier", () => {
    // L0 (fewer is better) against explained variance: steep gains up to L0 8, then flat
    const points = [
      { x: 2, y: 0.2 },
      { x: 4, y: 0.6 },
      { x: 8, y: 0.9 },
      { x: 16, y: 0.93 },
      { x: 32, y: 0.95 },
    ];
    const frontier = paretoFrontier(points, "min", "max");
    expect(frontier).toHaveLength(5);
    expect(kneeOf(points, frontier)).toBe(2);
    const straight = [1, 2, 3, 4].map((x) => ({ x, y: x }));
    expect(kneeOf(straight, paretoFrontier(straight, "min", "max"))).toBeNull();
    expect(kneeOf(points, frontier.slice(0, 2))).toBeNull();
  });

  it("opens on the held-out figures where members report them, and reads a running sweep by its running members", () => {
    const sweep = makeSweep(4);
    expect(defaultAxes(HELD_OUT, new Set(), reportedMetrics(sweep.members))).toEqual(["l0", "explained_variance"]);
    const withHeldOut = sweep.members.map((m, i) => ({
      ...m,
      metrics: { ...m.metrics, heldout_l0: i, heldout_explained_variance: i / 10 },
    }));
    expect(defaultAxes(HELD_OUT, new Set(), reportedMetrics(withHeldOut))).toEqual(["heldout_l0", "heldout_explained_variance"]);
    expect(defaultMetric(HELD_OUT, reportedMetrics(withHeldOut))).toBe("heldout_explained_variance");
    expect(defaultMetric(HELD_OUT, reportedMetrics(sweep.members))).toBe("explained_variance");
    const running = sweep.members.map((m) => ({ ...m, status: "running" }));
    expect(varyingMetrics(running, HELD_OUT).has("l0")).toBe(true);
  });

  it("draws parallel coordinates over the numeric parameters, the lr axis in logs, the best line the strongest", () => {
    const members = makeSweep(3).members.map((m, i) => ({
      ...m,
      params: { k: [4, 8, 16][i] as number, lr: [1e-4, 1e-3, 1e-1][i] as number, arch: "topk" },
      metrics: { explained_variance: [0.5, 0.7, 0.9][i] as number },
    }));
    const { axes, lines } = parallelCoordinates(members, ["k", "lr", "arch"], { name: "explained_variance", label: "ev", better: "max" });
    expect(axes.map((a) => [a.label, a.log])).toEqual([
      ["k", false],
      ["lr", true],
      ["ev", false],
    ]);
    expect(lines.map((l) => l.quality)).toEqual([0, expect.closeTo(0.5, 6), 1]);
    expect(lines[1]!.at[1]).toBeCloseTo(1 / 3, 6); // 1e-3 is a third of the way from 1e-4 to 1e-1 in logs
  });
});
