/**
 * A config value as the settings panel and the jobs' diff show it: numbers to 6 significant
 * figures (the exact value is the cell's title), null as "empty" (the kind's default decides),
 * lists and objects as JSON. Pure.
 */
export function settingText(value: unknown): string {
  if (value === null || value === undefined) return "empty";
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(6)));
  if (typeof value === "string") return value;
  return JSON.stringify(value);
}

/** The exact value, for a title: what `settingText` may have rounded. */
export function settingExact(value: unknown): string {
  return value === undefined ? "not set" : JSON.stringify(value);
}

/** Settings grouped by their first path segment ("dataset.path" under "dataset"), in order. */
export function groupOf(path: string): string {
  const dot = path.indexOf(".");
  return dot < 0 ? "" : path.slice(0, dot);
}
