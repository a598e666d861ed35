/**
 * The form's sweep rows as the API's `parameters` (issue 27): each row varies one config field,
 * by a list of values crossed with the others (`grid`), a list advanced in step with the other
 * such lists (`zip`), or a seeded random draw (`random`, drawn `count` times). Pure: rows in;
 * the parameters, the member count and what is wrong with each row out.
 */
import type { SweepParameters } from "../../client/sweepTypes";
import type { FieldSpec } from "../schemaForm";
import { rowValues } from "./sweepForm";
import { valueProblems } from "./valueCheck";

export type RowMode = "grid" | "zip" | "random";
export type Distribution = "uniform" | "log_uniform" | "int" | "choice";

export interface SweepRow {
  /** the config field's path ("k", "dataset.num_features") */
  path: string;
  /** grid: every combination with the other rows; zip: in step with the other zip rows; random: drawn */
  mode: RowMode;
  /** its values as typed, separated by commas ("2, 4, 8, 16"): grid, zip, and random's choice */
  text: string;
  distribution: Distribution;
  /** random's bounds as typed (uniform, log_uniform, int) */
  low: string;
  high: string;
}

export const DISTRIBUTIONS: { value: Distribution; label: string }[] = [
  { value: "uniform", label: "uniform" },
  { value: "log_uniform", label: "log-uniform" },
  { value: "int", label: "whole number" },
  { value: "choice", label: "one of" },
];

export const emptyRow = (): SweepRow => ({ path: "", mode: "grid", text: "", distribution: "uniform", low: "", high: "" });

// rates and coefficients are searched over decades: a learning rate, a weight decay, an L1 coefficient
const SCALE_FREE = /(^|_)(lr|learning_rate|weight_decay|decay|coefficient|coeff|eps|epsilon)$/;

/** Whether a float field is searched over decades (its name or label says it is a rate or a coefficient). */
export function searchedInLogs(spec: Pick<FieldSpec, "path" | "label"> | undefined): boolean {
  if (!spec) return false;
  const name = spec.path.split(".").pop() ?? "";
  return SCALE_FREE.test(name) || /\b(learning rate|coefficient)\b/i.test(spec.label);
}

/**
 * A random row's first distribution for its field: whole numbers for an int, one of the options
 * for a choice, log-uniform for a rate or a coefficient (1e-4 to 1e-2 drawn uniformly puts 90 % of
 * the draws above 1e-3), uniform for another number.
 */
export function distributionFor(spec: FieldSpec | undefined): Distribution {
  if (spec?.kind === "int") return "int";
  if (spec?.kind === "float" && searchedInLogs(spec)) return "log_uniform";
  if (spec?.kind === "float" || !spec) return "uniform";
  return "choice";
}

type Random = NonNullable<SweepParameters["random"]>[string];
type Values = NonNullable<SweepParameters["grid"]>[string];

/** A random row as the API's RandomParameter, or what is wrong with it (the API's rules, said before sending). */
export function randomOf(row: SweepRow, spec: FieldSpec | undefined): Random | string | null {
  if (row.distribution === "choice") {
    const values = rowValues(spec, row.text);
    const problems = valueProblems(spec, values);
    if (problems.length > 0) return problems.join("; ");
    return values.length > 0 ? { distribution: "choice", values: values as Values } : null;
  }
  if (row.low.trim() === "" || row.high.trim() === "") return null;
  const low = Number(row.low);
  const high = Number(row.high);
  if (!Number.isFinite(low) || !Number.isFinite(high)) return "low and high are numbers";
  // one message, the first that applies: a log-uniform low of 0 is not also "above high"
  if (row.distribution === "log_uniform" && low <= 0) return "log-uniform needs low above 0";
  if (low > high) return `low ${low} is above high ${high}`;
  if (row.distribution === "int" && !(Number.isInteger(low) && Number.isInteger(high)))
    return "whole number takes whole numbers for low and high";
  if (spec?.kind === "int" && row.distribution !== "int") return `${row.path} takes whole numbers: draw it as a whole number`;
  const bounds = valueProblems(spec && { ...spec, kind: "float" }, [low, high]);
  if (bounds.length > 0) return bounds.join("; ");
  return { distribution: row.distribution, low, high };
}

export interface SweepPlan {
  parameters: SweepParameters;
  /** members the parameters make (0: not enough given, or something wrong) */
  count: number;
  /** what is wrong, by the row's path: said beside the row as typed */
  rowErrors: Record<string, string>;
  /** what stops the sweep being sent, for the Start button; null when it can go */
  blocker: string | null;
}

/** draws as typed: a whole number from 1, else null */
const drawsOf = (text: string): number | null => {
  const n = Number(text.trim());
  return text.trim() !== "" && Number.isInteger(n) && n >= 1 ? n : null;
};

/** The rows (and the draws and seed typed for random ones) as the API's parameters and their member count. */
export function planSweep(rows: SweepRow[], specs: ReadonlyMap<string, FieldSpec>, draws: string, seed: string): SweepPlan {
  const parameters = { grid: {}, zip: {}, random: {} } as Required<Pick<SweepParameters, "grid" | "zip" | "random">>;
  const rowErrors: Record<string, string> = {};
  for (const row of rows) {
    if (!row.path) continue;
    const spec = specs.get(row.path);
    if (row.mode === "random") {
      const drawn = randomOf(row, spec);
      if (typeof drawn === "string") rowErrors[row.path] = drawn;
      else if (drawn) parameters.random[row.path] = drawn;
      continue;
    }
    const values = rowValues(spec, row.text);
    const problems = valueProblems(spec, values);
    if (problems.length > 0) rowErrors[row.path] = problems.join("; ");
    else if (values.length > 0) parameters[row.mode][row.path] = values as Values;
  }
  const zipped = Object.entries(parameters.zip);
  const zipLength = zipped[0]?.[1].length ?? 1;
  if (zipped.some(([, v]) => v.length !== zipLength)) {
    const lengths = zipped.map(([p, v]) => `${p} has ${v.length}`).join(", ");
    for (const [path] of zipped) rowErrors[path] = `rows in step need the same number of values: ${lengths}`;
  }
  const hasRandom = Object.keys(parameters.random).length > 0;
  const drawCount = drawsOf(draws);
  const given = Object.keys(parameters.grid).length + zipped.length + Object.keys(parameters.random).length;
  const marked = Object.keys(rowErrors);
  const blocker =
    (marked.length > 0 ? `Fix the ${marked.length === 1 ? "row" : "rows"} marked above (${marked.join(", ")}).` : null) ??
    (given === 0 ? "Give the sweep a field and its values." : hasRandom && drawCount === null ? "Say how many members to draw." : null);
  const grid = Object.values(parameters.grid).reduce((n, v) => n * v.length, 1);
  const count = blocker ? 0 : grid * (zipped.length > 0 ? zipLength : 1) * (hasRandom ? (drawCount ?? 0) : 1);
  const seedNumber = seed.trim() === "" ? undefined : Number(seed.trim());
  const out: SweepParameters = { grid: parameters.grid };
  if (zipped.length > 0) out.zip = parameters.zip;
  if (hasRandom) {
    out.random = parameters.random;
    out.count = drawCount ?? undefined;
    // a typed word goes as typed, so the API's 422 names it beside the seed
    if (seedNumber !== undefined) out.seed = (Number.isInteger(seedNumber) ? seedNumber : seed.trim()) as number;
  }
  return { parameters: out, count, rowErrors, blocker };
}
