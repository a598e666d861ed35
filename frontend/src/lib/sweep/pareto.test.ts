import { describe, expect, it } from "vitest";
import { betterOf, paretoFrontier, type Better, type XY } from "./pareto";

/** O(n²) reference: on the frontier when nothing dominates it (and no earlier twin). */
function bruteForce(points: XY[], xb: Better, yb: Better): Set<number> {
  const sx = xb === "min" ? 1 : -1;
  const sy = yb === "min" ? 1 : -1;
  const out = new Set<number>();
  points.forEach((p, i) => {
    const dominated = points.some((q, j) => {
      if (j === i) return false;
      const noWorse = sx * q.x <= sx * p.x && sy * q.y <= sy * p.y;
      const better = sx * q.x < sx * p.x || sy * q.y < sy * p.y;
      return noWorse && (better || j < i);
    });
    if (!dominated) out.add(i);
  });
  return out;
}

describe("paretoFrontier", () => {
  it("keeps the SAE trade-off: fewer active latents against more variance explained", () => {
    const points = [
      { x: 16, y: 0.95 }, // k=16
      { x: 2, y: 0.6 },
      { x: 8, y: 0.7 }, // dominated by (4, 0.8)
      { x: 4, y: 0.8 },
    ];
    expect(paretoFrontier(points, "min", "max")).toEqual([1, 3, 0]);
  });

  it("orders the frontier from the best x, with y improving along it", () => {
    const points = [
      { x: 1, y: 1 },
      { x: 3, y: 3 },
      { x: 2, y: 2 },
    ];
    expect(paretoFrontier(points, "max", "min")).toEqual([1, 2, 0]);
    expect(paretoFrontier(points, "min", "min")).toEqual([0]);
    expect(paretoFrontier(points, "max", "max")).toEqual([1]);
  });

  it("leaves out points without both figures, and keeps one of two twins", () => {
    const points = [
      { x: Number.NaN, y: 5 },
      { x: 1, y: 1 },
      { x: 1, y: 1 },
      { x: 2, y: Number.POSITIVE_INFINITY },
    ];
    expect(paretoFrontier(points, "min", "max")).toEqual([1]);
    expect(paretoFrontier([], "min", "max")).toEqual([]);
  });

  it("agrees with the O(n²) definition on random clouds, ties included", () => {
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 200; round += 1) {
      const points = Array.from({ length: 1 + Math.floor(random() * 40) }, () => ({
        x: Math.floor(random() * 10),
        y: Math.floor(random() * 10),
      }));
      for (const [xb, yb] of [
        ["min", "max"],
        ["max", "min"],
        ["min", "min"],
        ["max", "max"],
      ] as [Better, Better][]) {
        expect(new Set(paretoFrontier(points, xb, yb))).toEqual(bruteForce(points, xb, yb));
      }
    }
  });

  it("takes 100,000 points in well under a second", () => {
    const points = Array.from({ length: 100_000 }, (_, i) => ({ x: (i * 7919) % 100_003, y: Math.sin(i) }));
    const started = performance.now();
    paretoFrontier(points, "min", "max");
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe("betterOf", () => {
  it("reads losses, L0 and dead latents as better lower, the rest higher", () => {
    expect(["l0", "heldout_l0", "overall_loss", "dead_features", "mse_loss"].map(betterOf)).toEqual(["min", "min", "min", "min", "min"]);
    expect(["explained_variance", "mmcs", "features_recovered_pct", "activations_per_s"].map(betterOf)).toEqual([
      "max",
      "max",
      "max",
      "max",
    ]);
  });
});
