/**
 * The Pareto frontier of points in two metrics, each better lower ("min": L0, loss) or higher
 * ("max": explained variance). A point is on it when no other point is at least as good in both
 * and better in one. O(n log n): sort by x (best first, ties by y best first), then one pass
 * keeping the best y seen; a point whose y beats every better-x point's is on the frontier.
 */
export type Better = "min" | "max";

export interface XY {
  x: number;
  y: number;
}

/**
 * Indices of `points` on the frontier, ordered from the best x to the worst (so y improves
 * along it: for L0 down and explained variance up, fewer latents first). Points with a
 * non-finite coordinate are left out; of two identical points only the first is kept.
 */
export function paretoFrontier(points: readonly XY[], xBetter: Better, yBetter: Better): number[] {
  const xs = xBetter === "min" ? 1 : -1;
  const ys = yBetter === "min" ? 1 : -1;
  const order: number[] = [];
  points.forEach((p, i) => {
    if (Number.isFinite(p.x) && Number.isFinite(p.y)) order.push(i);
  });
  // sort keys: smaller is better after the sign flip
  order.sort((a, b) => {
    const pa = points[a] as XY;
    const pb = points[b] as XY;
    return xs * (pa.x - pb.x) || ys * (pa.y - pb.y) || a - b;
  });
  const frontier: number[] = [];
  let best = Infinity; // the best (signed) y among points with a better or equal x
  for (const i of order) {
    const y = ys * (points[i] as XY).y;
    if (y < best) {
      frontier.push(i);
      best = y;
    }
  }
  return frontier;
}

/** Whether a metric reads better lower (losses, L0, dead latents, errors) or higher (the rest). */
export function betterOf(metric: string): Better {
  return /loss|mse|(^|_)l0$|dead|error/i.test(metric) ? "min" : "max";
}

/**
 * The frontier's knee: the point farthest from the straight line through its two ends, both
 * axes scaled to [0, 1] (Satopää et al.'s Kneedle, in one pass). Before it, moving along the
 * frontier buys much of one metric for little of the other; past it, little. `frontier` holds
 * indices into `points` in frontier order; null for fewer than 3 points or a straight frontier.
 */
export function kneeOf(points: readonly XY[], frontier: readonly number[]): number | null {
  if (frontier.length < 3) return null;
  const at = frontier.map((i) => points[i] as XY);
  const xs = at.map((p) => p.x);
  const ys = at.map((p) => p.y);
  const span = (v: number[]) => Math.max(...v) - Math.min(...v) || 1;
  const [x0, y0, sx, sy] = [Math.min(...xs), Math.min(...ys), span(xs), span(ys)];
  const scaled = at.map((p) => ({ x: (p.x - x0) / sx, y: (p.y - y0) / sy }));
  const a = scaled[0] as XY;
  const b = scaled[scaled.length - 1] as XY;
  const length = Math.hypot(b.x - a.x, b.y - a.y) || 1;
  let best: number | null = null;
  let bestD = 1e-9;
  scaled.forEach((p, n) => {
    const d = Math.abs((b.x - a.x) * (a.y - p.y) - (a.x - p.x) * (b.y - a.y)) / length;
    if (d > bestD) {
      bestD = d;
      best = frontier[n] as number;
    }
  });
  return best;
}
