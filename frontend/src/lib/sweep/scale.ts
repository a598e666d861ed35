/** A linear axis for the sweep scatter: a padded domain, round ticks, value <-> pixel. */
export interface Axis {
  min: number;
  max: number;
  ticks: number[];
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

/** Maps a value on `axis` to a pixel between `from` and `to` (to < from for a y axis). */
export function toPixel(axis: Axis, value: number, from: number, to: number): number {
  return from + ((value - axis.min) / (axis.max - axis.min)) * (to - from);
}

/** A tick's text: short, without float noise (0.30000000000000004 -> 0.3). */
export function tickText(value: number): string {
  const abs = Math.abs(value);
  if (abs !== 0 && (abs >= 1e5 || abs < 1e-3)) return value.toExponential(1);
  return String(Number(value.toPrecision(4)));
}
