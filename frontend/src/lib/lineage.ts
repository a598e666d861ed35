import type { MetricPoint } from "../client/types";

/**
 * A resumed job's curve drawn on from where its parent's left off: the parent's points before
 * the resumed job's first step (the parent may have gone on past the checkpoint it resumes
 * from; those steps are run again), then the job's own.
 */
export function continuedCurve(parent: readonly MetricPoint[], own: readonly MetricPoint[]): MetricPoint[] {
  if (parent.length === 0) return [...own];
  const first = own[0]?.step ?? Infinity;
  return [...parent.filter((p) => p.step < first), ...own];
}
