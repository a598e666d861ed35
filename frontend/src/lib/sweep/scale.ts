/** An axis for the sweep's charts: a padded domain, round ticks, value <-> pixel; linear, or log10 (min and max then stay values). */
export interface Axis {
  min: number;
  max: number;
  ticks: number[];
  log?: boolean;
}

/** Round steps (1, 2, 5 x 10^n) giving about `count` ticks over [min, max]. */
export function niceTicks(min: number, max: number, count = 5): number[] {
  const span = max - min;
  if (!(span > 0) || !Number.isFinite(span)) return [min];
  const raw = span / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
  const out: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** The values' range with 5 % either side (a lone value gets ±1 or ±10 %), and its ticks. */
export function axisOf(values: readonly number[]): Axis {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (!Number.isFinite(lo)) return { min: 0, max: 1, ticks: niceTicks(0, 1) };
  const pad = hi > lo ? (hi - lo) * 0.05 : Math.abs(lo) * 0.1 || 1;
  const min = lo - pad;
  const max = hi + pad;
  return { min, max, ticks: niceTicks(min, max) };
}

/** Positive values that span a decade or more read better on a log axis (an lr from 1e-4 to 1e-1). */
export function spansDecades(values: readonly number[]): boolean {
  if (values.length === 0 || values.some((v) => !(v > 0))) return false;
  return Math.max(...values) / Math.min(...values) >= 10;
}

/** A log10 axis over positive values: padded by 5 % of the decades either way, ticks at 1, 2 and 5 per decade (1 per decade past 3 decades). */
export function logAxisOf(values: readonly number[]): Axis {
  const logs = values.filter((v) => v > 0).map(Math.log10);
  if (logs.length === 0) return axisOf(values);
  const lo = Math.min(...logs);
  const hi = Math.max(...logs);
  const pad = hi > lo ? (hi - lo) * 0.05 : 0.5;
  const min = 10 ** (lo - pad);
  const max = 10 ** (hi + pad);
  const steps = hi - lo > 3 ? [1] : [1, 2, 5];
  const ticks: number[] = [];
  for (let e = Math.floor(lo - pad); e <= Math.ceil(hi + pad); e++)
    for (const m of steps) {
      const t = Number((m * 10 ** e).toPrecision(12));
      if (t >= min && t <= max) ticks.push(t);
    }
  return { min, max, ticks, log: true };
}

/** Maps a value on `axis` to a pixel between `from` and `to` (to < from for a y axis). */
export function toPixel(axis: Axis, value: number, from: number, to: number): number {
  const at = axis.log
    ? (Math.log10(value) - Math.log10(axis.min)) / (Math.log10(axis.max) - Math.log10(axis.min))
    : (value - axis.min) / (axis.max - axis.min);
  return from + at * (to - from);
}

/** A tick's text: short, without float noise (0.30000000000000004 -> 0.3). */
export function tickText(value: number): string {
  const abs = Math.abs(value);
  if (abs !== 0 && (abs >= 1e5 || abs < 1e-3)) return value.toExponential(1);
  return String(Number(value.toPrecision(4)));
}
