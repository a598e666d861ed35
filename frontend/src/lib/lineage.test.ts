import { describe, expect, it } from "vitest";
import { continuedCurve } from "./lineage";

const at = "2026-01-01T00:00:00Z";
const pts = (...steps: number[]) => steps.map((step) => ({ step, metrics: { overall_loss: step }, created_at: at }));

describe("continuedCurve", () => {
  it("draws the parent's points before the resumed job's first step, then the job's own", () => {
    // the parent ran to 63 but resumes from its checkpoint at 50: 60 is run again
    expect(continuedCurve(pts(10, 20, 50, 60), pts(60, 70)).map((p) => p.step)).toEqual([10, 20, 50, 60, 70]);
  });

  it("shows the whole earlier curve until the resumed job reports", () => {
    expect(continuedCurve(pts(10, 20), []).map((p) => p.step)).toEqual([10, 20]);
    expect(continuedCurve([], pts(5)).map((p) => p.step)).toEqual([5]);
  });
});
