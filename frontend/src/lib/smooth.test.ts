import { describe, expect, it } from "vitest";
import { lastSteps, smoothPoints } from "./smooth";

const at = "2026-01-01T00:00:00Z";
// a null value: the metric was not reported at that step
const pts = (values: (number | null)[]) =>
  values.map((v, i) => ({ step: (i + 1) * 10, metrics: (v === null ? {} : { loss: v }) as Record<string, number>, created_at: at }));
const loss = (points: { metrics: Record<string, number> }[]) => points.map((p) => p.metrics["loss"] ?? null);

describe("smoothPoints", () => {
  it("leaves points alone at weight 0 and starts at the first value (no bias to 0)", () => {
    expect(loss(smoothPoints(pts([4, 2]), 0))).toEqual([4, 2]);
    const smoothed = loss(smoothPoints(pts([4, 2, 4, 2]), 0.5));
    expect(smoothed[0]).toBe(4);
    // between the raw values, and damped: the raw curve swings by 2, the smoothed by much less
    expect(Math.abs(smoothed[3]! - smoothed[2]!)).toBeLessThan(1);
  });

  it("skips missing values", () => {
    expect(loss(smoothPoints(pts([4, null, 4]), 0.9))).toEqual([4, null, expect.closeTo(4, 9)]);
  });
});

describe("lastSteps", () => {
  it("keeps the points of the last N steps", () => {
    expect(lastSteps(pts([1, 2, 3, 4]), 20).map((p) => p.step)).toEqual([30, 40]);
    expect(lastSteps(pts([1, 2]), 0)).toHaveLength(2);
  });
});
