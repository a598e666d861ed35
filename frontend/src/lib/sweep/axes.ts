/**
 * Which summary metrics the sweep page's frontier opens on, and which members' curves it draws
 * before any is ticked. Pure: the members and the kind's metrics in, names and job ids out.
 */
import type { SweepMember } from "../../client/sweepTypes";
import { betterOf, paretoFrontier } from "./pareto";

type Named = { name: string };

/** The metrics whose value differs between the members that succeeded (or, before any has, those running): a constant axis shows nothing. */
export function varyingMetrics(members: readonly SweepMember[], metrics: readonly Named[]): Set<string> {
  const succeeded = members.filter((m) => m.status === "succeeded");
  const done = succeeded.length > 0 ? succeeded : members.filter((m) => m.status === "running");
  return new Set(
    metrics.map((m) => m.name).filter((name) => new Set(done.map((m) => m.metrics[name]).filter((v) => v !== undefined)).size > 1),
  );
}

/** The metrics any member reported. */
export function reportedMetrics(members: readonly SweepMember[]): Set<string> {
  return new Set(members.flatMap((m) => Object.keys(m.metrics)));
}

/**
 * An SAE sweep opens on L0 (fewer is better) against explained variance (more is better), on
 * held-out rows where the members report them (the training batches' figures flatter a model
 * that memorised them); an axis the same for every member (L0 when k fixes it) gives way to
 * the first metric that varies.
 */
export function defaultAxes(
  metrics: readonly Named[],
  varying: ReadonlySet<string> = new Set(),
  reported: ReadonlySet<string> = new Set(),
): [string, string] {
  const names = metrics.map((m) => m.name);
  const heldOut: [string, string] = ["heldout_l0", "heldout_explained_variance"];
  let [x, y]: [string, string] = heldOut.every((n) => names.includes(n) && reported.has(n))
    ? heldOut
    : names.includes("l0") && names.includes("explained_variance")
      ? ["l0", "explained_variance"]
      : [names[0] ?? "", names[1] ?? names[0] ?? ""];
  if (varying.size === 0) return [x, y];
  if (!varying.has(x)) x = names.find((n) => varying.has(n) && n !== y) ?? x;
  if (!varying.has(y)) y = names.find((n) => varying.has(n) && n !== x) ?? y;
  return [x, y];
}

// this many members or fewer: all their curves at first; more: the frontier's
const ALL_CURVES = 8;
const MOST_CURVES = 10;

/** The job ids whose curves the page draws until the user ticks: all of a small sweep, else its frontier's on the default axes. */
export function defaultCurves(members: readonly SweepMember[], metrics: readonly Named[]): number[] {
  if (members.length <= ALL_CURVES) return members.map((m) => m.job_id);
  const [x, y] = defaultAxes(metrics, varyingMetrics(members, metrics), reportedMetrics(members));
  const done = members.filter((m) => m.status === "succeeded" && m.metrics[x] !== undefined && m.metrics[y] !== undefined);
  const points = done.map((m) => ({ x: m.metrics[x] as number, y: m.metrics[y] as number }));
  return paretoFrontier(points, betterOf(x), betterOf(y))
    .slice(0, MOST_CURVES)
    .map((i) => (done[i] as SweepMember).job_id);
}

/**
 * The metric the sweep is read on against its parameters: explained variance on held-out rows
 * where reported, else on training batches, else the first summary metric reported (the API's
 * default, services/sweeps/analysis.default_metric).
 */
export function defaultMetric(metrics: readonly Named[], reported: ReadonlySet<string>): string {
  const names = metrics.map((m) => m.name).filter((n) => reported.has(n));
  const ordered = [...names.filter((n) => n.startsWith("heldout")), ...names.filter((n) => !n.startsWith("heldout"))];
  return ordered.find((n) => n.includes("explained_variance")) ?? names[0] ?? "";
}
