/**
 * Parallel coordinates of a sweep: one vertical axis per numeric swept parameter (log where its
 * values span decades) and one for the metric, one line per member through its values. Pure:
 * members in, each line's points (0..1 along each axis) out; the component scales them.
 */
import type { SweepMember } from "../../client/sweepTypes";
import { spansDecades } from "./scale";

export interface ParallelAxis {
  key: string;
  label: string;
  log: boolean;
  min: number;
  max: number;
}

export interface ParallelLine {
  jobId: number;
  label: string;
  /** 0 (bottom) to 1 (top) on each axis, in axis order */
  at: number[];
  /** the metric's place among the members, 0 worst to 1 best: the line's colour */
  quality: number;
  running: boolean;
}

const numberOf = (value: unknown): number | null => (typeof value === "number" && Number.isFinite(value) ? value : null);

function axisFor(key: string, label: string, values: number[]): ParallelAxis {
  const log = spansDecades(values);
  return { key, label, log, min: Math.min(...values), max: Math.max(...values) };
}

function place(axis: ParallelAxis, value: number): number {
  if (axis.max === axis.min) return 0.5;
  if (axis.log) return (Math.log10(value) - Math.log10(axis.min)) / (Math.log10(axis.max) - Math.log10(axis.min));
  return (value - axis.min) / (axis.max - axis.min);
}

/** The axes and lines of the members that succeeded or run and report `metric`; parameters that are not numbers for every such member are left out. */
export function parallelCoordinates(
  members: readonly SweepMember[],
  paths: readonly string[],
  metric: { name: string; label: string; better: "min" | "max" },
): { axes: ParallelAxis[]; lines: ParallelLine[] } {
  const shown = members.filter((m) => (m.status === "succeeded" || m.status === "running") && numberOf(m.metrics[metric.name]) !== null);
  if (shown.length === 0) return { axes: [], lines: [] };
  const axes = paths
    .filter((p) => shown.every((m) => numberOf(m.params[p]) !== null))
    .map((p) =>
      axisFor(
        `param:${p}`,
        p,
        shown.map((m) => m.params[p] as number),
      ),
    );
  const values = shown.map((m) => m.metrics[metric.name] as number);
  axes.push(axisFor(`metric:${metric.name}`, metric.label, values));
  const metricAxis = axes[axes.length - 1] as ParallelAxis;
  const lines = shown.map((m) => {
    const y = m.metrics[metric.name] as number;
    const along = place(metricAxis, y);
    return {
      jobId: m.job_id,
      label: `#${m.index}`,
      at: axes.map((a, i) => (i === axes.length - 1 ? along : place(a, m.params[a.label] as number))),
      quality: metric.better === "max" ? along : 1 - along,
      running: m.status === "running",
    };
  });
  return { axes, lines };
}
