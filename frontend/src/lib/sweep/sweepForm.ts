/**
 * The new-job form's "Sweep": for any config field, a list of values (every combination is a
 * member, the API's grid), and max_parallel. Pure: what was typed in, the request body and the
 * member count out, and the API's 422 sorted into the form's places.
 */
import type { SweepCreate } from "../../client/sweepTypes";
import type { JobCreate } from "../../client/types";
import { configValue, readValue } from "../fieldValues";
import type { FieldSpec } from "../schemaForm";

export interface SweepRow {
  /** the config field's path ("k", "dataset.num_features") */
  path: string;
  /** its values as typed, separated by commas: "2, 4, 8, 16" */
  text: string;
}

/** A field a sweep can vary: one value of its own (not a list's or a map's rows). */
export function sweepable(spec: FieldSpec): boolean {
  return spec.kind !== "list" && spec.kind !== "map";
}

/** "2, 4, [1, 2], "a,b"" -> its pieces, split at the commas outside brackets and quotes. */
export function splitValues(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quoted = false;
  let piece = "";
  for (const ch of text) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && (ch === "[" || ch === "{")) depth += 1;
    else if (!quoted && (ch === "]" || ch === "}")) depth -= 1;
    if (ch === "," && depth === 0 && !quoted) {
      out.push(piece);
      piece = "";
    } else piece += ch;
  }
  out.push(piece);
  return out.map((p) => p.trim()).filter((p) => p !== "");
}

/** Each piece read as the field reads a typed value (a number for a number field, true/false for a checkbox). */
export function rowValues(spec: FieldSpec | undefined, text: string): unknown[] {
  return splitValues(text).map((piece) => {
    if (!spec) return readValue(piece, "json");
    if (spec.kind === "bool") return piece === "true" ? true : piece === "false" ? false : piece;
    return configValue(spec, piece) ?? piece;
  });
}

/** The grid: each row with a field and at least one value (a path named twice: the last row). */
export function gridOf(rows: SweepRow[], specs: ReadonlyMap<string, FieldSpec>): Record<string, unknown[]> {
  const grid: Record<string, unknown[]> = {};
  for (const row of rows) {
    const values = rowValues(specs.get(row.path), row.text);
    if (row.path && values.length > 0) grid[row.path] = values;
  }
  return grid;
}

/** Every combination: the product of the lists' lengths (0 without any). */
export function memberCount(grid: Record<string, unknown[]>): number {
  const lists = Object.values(grid);
  return lists.length === 0 ? 0 : lists.reduce((n, values) => n * values.length, 1);
}

/** max_parallel as typed: empty is none (no limit); else a whole number, or the text for the API to refuse. */
export function maxParallelOf(text: string): number | string | undefined {
  const t = text.trim();
  if (t === "") return undefined;
  const n = Number(t);
  return Number.isInteger(n) ? n : t;
}

/** POST /api/sweeps: the form's job as `job`, its name as the sweep's. */
export function sweepBody(job: JobCreate, grid: Record<string, unknown[]>, maxParallel: string): SweepCreate {
  const { name, ...rest } = job;
  const limit = maxParallelOf(maxParallel);
  return {
    ...(name ? { name } : {}),
    job: rest,
    parameters: { grid: grid as SweepCreate["parameters"]["grid"] },
    // a typed word goes as typed, so the API's 422 names it beside the field
    ...(limit !== undefined ? { max_parallel: limit as number } : {}),
  };
}

export interface SweepErrors {
  /** the form's own places: "config.d_in", "name", "scheduling..." as a job's 422 says them */
  job: Record<string, string>;
  /** by parameter path ("k"): a member's message, which names its index and values */
  rows: Record<string, string>;
  /** the API's message on max_parallel */
  maxParallel?: string;
  /** whatever names no place above: "parameters...", a member's devices */
  sweep: string[];
}

/**
 * The 422's messages (fieldErrors keys) sorted: "job.config.d_in" -> config.d_in beside its field;
 * "members[1].config.k" (or "members[1].k") -> the row varying k, else the sweep's messages.
 */
export function sortSweepErrors(errors: Record<string, string>, paths: string[]): SweepErrors {
  const out: SweepErrors = { job: {}, rows: {}, sweep: [] };
  for (const [key, msg] of Object.entries(errors)) {
    if (key.startsWith("job.")) {
      out.job[key.slice(4)] = msg;
      continue;
    }
    const member = /^members\[\d+\]\.(?:config\.)?(.*)$/.exec(key);
    const path = member ? paths.find((p) => member[1] === p || member[1]?.startsWith(`${p}.`)) : undefined;
    if (path !== undefined) out.rows[path] = out.rows[path] ? `${out.rows[path]}; ${msg}` : msg;
    else if (key === "name") out.job[key] = msg;
    else if (key === "max_parallel") out.maxParallel = msg;
    else out.sweep.push(key.startsWith("members[") ? msg : `${key}: ${msg}`);
  }
  return out;
}
