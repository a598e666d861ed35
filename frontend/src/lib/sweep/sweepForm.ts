/**
 * The new-job form's "Sweep": the values typed for a field (its rows: sweepParameters.ts) and
 * max_parallel. Pure: what was typed in, the request body out, and the API's 422 sorted into
 * the form's places.
 */
import type { SweepCreate, SweepParameters } from "../../client/sweepTypes";
import type { JobCreate } from "../../client/types";
import { configValue, readValue } from "../fieldValues";
import type { FieldSpec } from "../schemaForm";

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

/** max_parallel as typed: empty is none (no limit); else a whole number, or the text for the API to refuse. */
export function maxParallelOf(text: string): number | string | undefined {
  const t = text.trim();
  if (t === "") return undefined;
  const n = Number(t);
  return Number.isInteger(n) ? n : t;
}

/** POST /api/sweeps: the form's job as `job`, its name as the sweep's. */
export function sweepBody(job: JobCreate, parameters: SweepParameters, maxParallel: string): SweepCreate {
  const { name, ...rest } = job;
  const limit = maxParallelOf(maxParallel);
  return {
    ...(name ? { name } : {}),
    job: rest,
    parameters,
    // a typed word goes as typed, so the API's 422 names it beside the field
    ...(limit !== undefined ? { max_parallel: limit as number } : {}),
  };
}

export interface SweepErrors {
  /** the form's own places: "config.d_in", "name", "scheduling..." as a job's 422 says them */
  job: Record<string, string>;
  /** by parameter path ("k"): a member's message, which names its index and values */
  rows: Record<string, string>;
  /** the API's message on max_parallel, and on random's draws (`count`) and seed */
  maxParallel?: string;
  draws?: string;
  seed?: string;
  /** whatever names no place above: "parameters...", a member's devices */
  sweep: string[];
}

// where a member runs on a Slurm cluster: the submit's checks name these without "job."
const JOB_PLACE_FIELDS = new Set(["cluster", "partition", "count", "nodes"]);

/**
 * The 422's messages (fieldErrors keys) sorted: "job.config.d_in" -> config.d_in beside its field;
 * "members[1].config.k" (or "members[1].k", or "parameters.random.k") -> the row varying k,
 * "parameters.count" and "parameters.seed" -> random's draws and seed, else the sweep's messages.
 */
export function sortSweepErrors(errors: Record<string, string>, paths: string[]): SweepErrors {
  const out: SweepErrors = { job: {}, rows: {}, sweep: [] };
  for (const [key, msg] of Object.entries(errors)) {
    if (key.startsWith("job.")) {
      out.job[key.slice(4)] = msg;
      continue;
    }
    const place = /^members\[\d+\]\.(?:config\.)?(.*)$/.exec(key) ?? /^parameters\.(?:grid|zip|random)\.(.*)$/.exec(key);
    const path = place ? paths.find((p) => place[1] === p || place[1]?.startsWith(`${p}.`)) : undefined;
    if (path !== undefined) out.rows[path] = out.rows[path] ? `${out.rows[path]}; ${msg}` : msg;
    else if (key === "name" || JOB_PLACE_FIELDS.has(key)) out.job[key] = msg;
    else if (key === "max_parallel") out.maxParallel = msg;
    else if (key === "parameters.count") out.draws = msg;
    else if (key === "parameters.seed") out.seed = msg;
    else out.sweep.push(key.startsWith("members[") ? msg : `${key}: ${msg}`);
  }
  return out;
}
