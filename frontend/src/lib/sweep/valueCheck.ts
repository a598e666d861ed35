/**
 * A sweep row's values checked against its field's schema before the sweep is sent: the
 * type (a whole number, a number, one of the options, true/false) and the bounds, each bad
 * value named. Pure: the field's spec and the values read, the problems out.
 */
import type { FieldSpec } from "../schemaForm";

const shown = (value: unknown): string => (typeof value === "string" ? `"${value}"` : JSON.stringify(value));

/** What is wrong with one value for the field, or null when the API would take it. */
export function valueProblem(spec: FieldSpec, value: unknown): string | null {
  if (typeof value === "string" && spec.words?.includes(value)) return null;
  if (spec.kind === "int" || spec.kind === "float") {
    if (typeof value !== "number") return `${shown(value)} is not a number`;
    if (spec.kind === "int" && !Number.isInteger(value)) return `${shown(value)} is not a whole number`;
    if (spec.min !== undefined && value < spec.min) return `${shown(value)} is below ${spec.min}, the least ${spec.path} takes`;
    if (spec.max !== undefined && value > spec.max) return `${shown(value)} is above ${spec.max}, the most ${spec.path} takes`;
    return null;
  }
  if (spec.kind === "bool") return typeof value === "boolean" ? null : `${shown(value)} is not true or false`;
  if (spec.kind === "select" && spec.options && !spec.options.includes(String(value)))
    return `${shown(value)} is not one of ${spec.options.join(", ")}`;
  return null;
}

/** Every bad value of a row, in the order typed; empty when all are good (or the field is unknown). */
export function valueProblems(spec: FieldSpec | undefined, values: readonly unknown[]): string[] {
  if (!spec) return [];
  return values.map((v) => valueProblem(spec, v)).filter((p): p is string => p !== null);
}
