/**
 * How one field is edited, from its schema: a select, a checkbox, a number or text box, a box
 * that reads JSON, or rows (a list: one value a row; an object of free keys: key and value).
 */
import { asList, isObject, members, resolve, type Schema } from "./nodes";
import { valueOrWords } from "./unions";

/** The kind of one value: of a field, or of each row of a list or map field. */
export type ValueKind = "int" | "float" | "text" | "json";
export type FieldKind = ValueKind | "select" | "bool" | "list" | "map";

export interface FieldShape {
  kind: FieldKind;
  /** a select's choices */
  options?: string[];
  /** a list's or map's rows */
  item?: ValueKind;
  /** words accepted besides the value (`int | "auto"`), sent as typed */
  words?: string[];
}

/** The kind of a scalar value; anything else (an object, a union, no type) is read as JSON. */
function valueKind(schema: Schema): ValueKind {
  switch (schema["type"]) {
    case "integer":
      return "int";
    case "number":
      return "float";
    case "string":
      return "text";
    default:
      return "json";
  }
}

/** The schema of a map's values: `additionalProperties` (`true` or absent: any JSON value). */
function mapValues(schema: Schema, root: Schema): Schema | null {
  const extra = schema["additionalProperties"];
  if (schema["type"] !== "object" || isObject(schema["properties"]) || extra === false) return null;
  return isObject(extra) ? resolve(extra, root) : {};
}

export function shapeOf(schema: Schema, root: Schema): FieldShape {
  const values = schema["enum"] !== undefined ? asList(schema["enum"]) : schema["const"] !== undefined ? [schema["const"]] : null;
  if (values) return { kind: "select", options: values.map(String) };
  const either = valueOrWords(schema, root);
  if (either) {
    const inner = shapeOf(either.value, root);
    return inner.kind === "int" || inner.kind === "float" || inner.kind === "text" ? { ...inner, words: either.words } : { kind: "json" };
  }
  if (schema["type"] === "boolean") return { kind: "bool" };
  if (schema["type"] === "array") return { kind: "list", item: valueKind(resolve(schema["items"], root)) };
  const mapped = mapValues(schema, root);
  if (mapped) return { kind: "map", item: valueKind(mapped) };
  const types = members(schema, root).map((m) => m["type"]);
  // `int | float` (a count or a share): one number box; what is typed goes as JSON reads it
  if (types.length > 0 && types.every((t) => t === "integer" || t === "number")) return { kind: "float" };
  if (types.length > 0) return { kind: "json" };
  if (schema["type"] === "integer" || schema["type"] === "number" || schema["type"] === "string") {
    return { kind: valueKind(schema) };
  }
  return { kind: schema["type"] === undefined ? "json" : "text" };
}
