const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

export function formatBytes(bytes: number | null | undefined, digits = 1): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return "—";
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const sign = bytes < 0 ? "-" : "";
  return `${sign}${value.toFixed(unit === 0 ? 0 : digits)} ${UNITS[unit]}`;
}

export function formatNumber(value: number | null | undefined, digits = 0, unit = ""): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "—";
  return `${value.toFixed(digits)}${unit}`;
}

/** Compact: 1234 -> 1.2k, 2500000 -> 2.5M. */
export function formatCompact(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "—";
  const abs = Math.abs(value);
  if (abs >= 1e9) return `${(value / 1e9).toFixed(1)}G`;
  if (abs >= 1e6) return `${(value / 1e6).toFixed(1)}M`;
  if (abs >= 1e3) return `${(value / 1e3).toFixed(1)}k`;
  if (abs !== 0 && abs < 0.01) return value.toExponential(2);
  return value.toFixed(abs < 10 ? 3 : 1);
}

/**
 * A summary metric by what it measures: a percent (`*_pct`) with at most one decimal ("12.3",
 * "0"), a whole number as one ("0 dead", not "0.000"; large ones compact), the rest compact.
 */
export function formatMetric(metric: string, value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "—";
  if (metric.endsWith("_pct")) return String(Number(value.toFixed(1)));
  if (Number.isInteger(value) && Math.abs(value) < 1e3) return String(value);
  return formatCompact(value);
}

/** "12s", "5m", "3h", "2d" since `iso`, relative to `now` (ms). */
export function formatAge(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return "—";
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (!Number.isFinite(seconds)) return "—";
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

export function formatDuration(startIso: string | null, endIso: string | null, now = Date.now()): string {
  if (!startIso) return "—";
  const end = endIso ? Date.parse(endIso) : now;
  return formatSeconds((end - Date.parse(startIso)) / 1000);
}

/** "45s", "3m 20s", "2h 5m"; "—" for null (not known yet). */
export function formatSeconds(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "—";
  const seconds = Math.max(0, Math.round(value));
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return h > 0 ? `${h}h ${m}m` : m > 0 ? `${m}m ${s}s` : `${s}s`;
}

/** Load level of a fraction in [0, 1]: picks the colour of bars and badges. */
export function loadLevel(fraction: number): "low" | "mid" | "high" {
  if (fraction >= 0.85) return "high";
  if (fraction >= 0.6) return "mid";
  return "low";
}

/** A reported metric as a number, or null when it is missing or not numeric. */
export function numberOrNull(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

const SIZE_UNITS: [string, number][] = [
  ["TiB", 1024 ** 4],
  ["GiB", 1024 ** 3],
  ["MiB", 1024 ** 2],
  ["KiB", 1024],
];

/**
 * Bytes as a size one would type, exact: "4 GiB", "1.5 GiB", "256 MiB"; the largest unit the
 * value is a whole thousandth of (so the text reads back to the very bytes), else the bytes.
 */
export function sizeText(bytes: number): string {
  for (const [unit, size] of SIZE_UNITS) {
    const value = bytes / size;
    if (value >= 1 && value < 10000 && Number.isInteger(Math.round(value * 1000)) && Math.round(value * 1000) === value * 1000)
      return `${value} ${unit}`;
  }
  return String(bytes);
}
