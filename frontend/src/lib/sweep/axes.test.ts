import { describe, expect, it } from "vitest";
import { makeSweep } from "../../test/sweepFixtures";
import { defaultAxes, defaultCurves, varyingMetrics } from "./axes";

const METRICS = [{ name: "overall_loss" }, { name: "l0" }, { name: "explained_variance" }];

describe("the frontier's default axes and curves", () => {
  it("opens on L0 against explained variance, unless L0 is the same for every member", () => {
    const sweep = makeSweep(4);
    expect(defaultAxes(METRICS, varyingMetrics(sweep.members, METRICS))).toEqual(["l0", "explained_variance"]);
    const fixed = sweep.members.map((m) => ({ ...m, metrics: { ...m.metrics, l0: 5 } }));
    expect([...varyingMetrics(fixed, METRICS)]).toEqual(["overall_loss", "explained_variance"]);
    expect(defaultAxes(METRICS, varyingMetrics(fixed, METRICS))).toEqual(["overall_loss", "explained_variance"]);
    expect(defaultAxes(METRICS)).toEqual(["l0", "explained_variance"]); // nothing finished yet: no way to tell
  });

  it("draws every member of a small sweep, else the frontier's", () => {
    expect(defaultCurves(makeSweep(4).members, METRICS)).toEqual([100, 101, 102, 103]);
    const big = makeSweep(16).members;
    const curves = defaultCurves(big, METRICS);
    expect(curves.length).toBeGreaterThan(0);
    expect(curves.length).toBeLessThanOrEqual(10);
    expect(curves.every((id) => big.some((m) => m.job_id === id))).toBe(true);
  });
});
