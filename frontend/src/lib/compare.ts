/**
 * Jobs compared side by side (the /compare page): which jobs (from the URL), their configs field
 * by field with the differing fields marked, their kinds' summary figures, and one metric's
 * curves on a shared x (the step, or the time since each job's first report).
 */
import type uPlot from "uplot";
import type { Job, JobKindInfo, MetricPoint } from "../client/types";

/** The most jobs one comparison asks for (GET /api/jobs?id= takes this many). */
export const MAX_COMPARED = 100;

/** `?jobs=3,7,12` as ids: positive whole numbers, each once, in the order given. */
export function parseJobIds(param: string | null): number[] {
  const ids = (param ?? "")
    .split(/[\s,]+/)
    .filter((s) => /^\d+$/.test(s))
    .map(Number)
    .filter((n) => n >= 1 && Number.isSafeInteger(n));
  return [...new Set(ids)].slice(0, MAX_COMPARED);
}

/** The page comparing these jobs: a URL to share. */
export function compareUrl(ids: readonly number[]): string {
  return `/compare?jobs=${ids.join(",")}`;
}

/** Each leaf of a config by dotted path, in its order; lists are leaves. */
export function flattenConfig(config: Record<string, unknown>, prefix = ""): [string, unknown][] {
  return Object.entries(config).flatMap(([key, value]): [string, unknown][] =>
    value !== null && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length > 0
      ? flattenConfig(value as Record<string, unknown>, `${prefix}${key}.`)
      : [[`${prefix}${key}`, value]],
  );
}

export interface ConfigRow {
  path: string;
  /** one per job, as text; null where the job's config has no such field */
  values: (string | null)[];
  differs: boolean;
}

function shown(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** Every config field of any of the jobs, one value per job; `differs` where they are not all alike. */
export function configRows(configs: readonly Record<string, unknown>[]): ConfigRow[] {
  const flats = configs.map((c) => new Map(flattenConfig(c)));
  const paths = [...new Set(flats.flatMap((f) => [...f.keys()]))];
  return paths.map((path) => {
    const values = flats.map((f) => (f.has(path) ? shown(f.get(path)) : null));
    return { path, values, differs: new Set(values).size > 1 };
  });
}

export interface FigureRow {
  metric: string;
  label: string;
  values: (number | null)[];
  /** the index of the job whose value beats every other's, where the figure says which way is better */
  best: number | null;
}

// Which way is better, for the figures where it is plain: lower losses and fewer dead
// features; more variance explained, more features recovered. L0 and the rest are a
// trade-off or unknown: no job is marked best on them.
const LOWER_BETTER = /loss|dead|mse/;
const HIGHER_BETTER = /explained_variance|mmcs|recovered|accuracy/;

function bestOf(metric: string, values: readonly (number | null)[]): number | null {
  const sign = LOWER_BETTER.test(metric) ? -1 : HIGHER_BETTER.test(metric) ? 1 : 0;
  const present = values.flatMap((v, i) => (v === null ? [] : [{ v: v * sign, i }]));
  if (sign === 0 || present.length < 2) return null;
  const sorted = [...present].sort((a, b) => b.v - a.v);
  return sorted[0] && sorted[1] && sorted[0].v > sorted[1].v ? sorted[0].i : null; // a tie: none
}

/** Each kind's summary figures (the union, in the kinds' order) with every job's newest value. */
export function figureRows(jobs: readonly Job[], kinds: readonly JobKindInfo[]): FigureRow[] {
  const byName = new Map(kinds.map((k) => [k.name, k]));
  const labels = new Map<string, string>();
  for (const job of jobs)
    for (const s of byName.get(job.kind)?.summary_metrics ?? []) if (!labels.has(s.metric)) labels.set(s.metric, s.label);
  const rows: FigureRow[] = [];
  for (const [metric, label] of labels) {
    const values = jobs.map((j) => {
      const v = j.latest_metrics?.[metric];
      return typeof v === "number" && Number.isFinite(v) ? v : null;
    });
    if (values.every((v) => v === null)) continue;
    rows.push({ metric, label, values, best: bestOf(metric, values) });
  }
  return rows;
}

export interface MetricOption {
  name: string;
  label: string;
}

/** The metrics to offer: the kinds' chart series first (with their labels), then any other metric reported. */
export function metricOptions(kinds: readonly JobKindInfo[], runs: readonly MetricPoint[][]): MetricOption[] {
  const options = new Map<string, string>();
  for (const kind of kinds)
    for (const chart of kind.charts) for (const s of chart.series) if (!options.has(s.metric)) options.set(s.metric, s.label);
  const reported = new Set(runs.flatMap((points) => points.flatMap((p) => Object.keys(p.metrics))));
  const offered = [...options].filter(([name]) => reported.size === 0 || reported.has(name));
  for (const name of [...reported].sort()) if (!options.has(name)) offered.push([name, name]);
  return offered.map(([name, label]) => ({ name, label }));
}

export type XAxis = "step" | "time";

/**
 * Each run's points of `metric` on one x: the step, or seconds since the run's first report
 * (runs that started hours apart still overlay). Gaps where a run has no point at an x.
 */
export function alignRuns(runs: readonly MetricPoint[][], metric: string, x: XAxis): uPlot.AlignedData {
  const located = runs.map((points) => {
    const first = points[0] ? Date.parse(points[0].created_at) : 0;
    return points.flatMap((p) => {
      const v = p.metrics[metric];
      return typeof v === "number" ? [[x === "step" ? p.step : Math.round((Date.parse(p.created_at) - first) / 1000), v] as const] : [];
    });
  });
  const xs = [...new Set(located.flatMap((pts) => pts.map(([at]) => at)))].sort((a, b) => a - b);
  const index = new Map(xs.map((at, i) => [at, i]));
  const series = located.map((pts) => {
    const ys: (number | null)[] = xs.map(() => null);
    for (const [at, v] of pts) ys[index.get(at) ?? 0] = v;
    return ys;
  });
  return [xs, ...series] as uPlot.AlignedData;
}

/** Tags as typed: separated by spaces or commas, each once. */
export function parseTags(text: string): string[] {
  return [...new Set(text.split(/[\s,]+/).filter(Boolean))];
}

/** The jobs list's summary column: the first `n` of its kind's summary figures it has reported. */
export function leadingFigures(job: Job, kind: JobKindInfo | undefined, n = 2): { metric: string; label: string; value: number }[] {
  const out: { metric: string; label: string; value: number }[] = [];
  for (const s of kind?.summary_metrics ?? []) {
    const value = job.latest_metrics?.[s.metric];
    if (typeof value === "number" && Number.isFinite(value)) out.push({ metric: s.metric, label: s.label, value });
    if (out.length === n) break;
  }
  return out;
}

/** The differing settings a metric can be drawn against: every job that sets it sets a number (two at least). */
export function numericSettings(rows: readonly ConfigRow[]): { path: string; values: (number | null)[] }[] {
  return rows.flatMap((row) => {
    if (!row.differs) return [];
    const values = row.values.map((v) => (v !== null && v.trim() !== "" && Number.isFinite(Number(v)) ? Number(v) : null));
    const set = row.values.filter((v) => v !== null).length;
    const numbers = values.filter((v) => v !== null).length;
    return numbers >= 2 && numbers === set ? [{ path: row.path, values }] : [];
  });
}
