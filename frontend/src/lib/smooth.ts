import type { MetricPoint } from "../client/types";

/**
 * TensorBoard's smoothing: an exponential moving average with its start-up bias removed, per
 * metric, skipping points where the metric is missing. weight 0 leaves the points as they are.
 */
export function smoothPoints(points: readonly MetricPoint[], weight: number): MetricPoint[] {
  if (weight <= 0) return [...points];
  const state = new Map<string, { last: number; n: number }>();
  return points.map((p) => {
    const metrics: Record<string, unknown> = { ...(p.metrics as Record<string, unknown>) };
    for (const [name, value] of Object.entries(metrics)) {
      if (typeof value !== "number" || !Number.isFinite(value)) continue;
      const s = state.get(name) ?? { last: 0, n: 0 };
      s.last = s.last * weight + (1 - weight) * value;
      s.n += 1;
      state.set(name, s);
      metrics[name] = s.last / (1 - weight ** s.n);
    }
    return { ...p, metrics: metrics as MetricPoint["metrics"] };
  });
}

/** The points of the last `steps` steps (0: all of them). */
export function lastSteps(points: readonly MetricPoint[], steps: number): MetricPoint[] {
  const end = points[points.length - 1]?.step;
  if (steps <= 0 || end === undefined) return [...points];
  return points.filter((p) => p.step > end - steps);
}
