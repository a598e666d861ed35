/**
 * A kind's form, read from its config's JSON Schema (GET /api/kinds/{kind_name}, Pydantic's
 * `model_json_schema()`): which fields, how each is edited, its label, hint and bounds. No kind
 * is named here; a kind installed with pip gets its form from its own schema.
 *
 * Read: `$ref` into `$defs`; nested objects as groups; `enum`/`const` as selects; booleans as
 * checkboxes; `integer` and `number`; arrays as rows; objects of free keys as key/value rows;
 * `X | None` as an optional X; `int | "auto"` as a number that also takes the word; any other
 * union or free value as JSON; a discriminated union (oneOf/anyOf of objects sharing a `const`
 * property, Pydantic's `Field(discriminator=...)`) as a select whose choice shows that variant's
 * fields. Keywords a kind may add (`json_schema_extra`): `x-unit: "bytes"` shows and takes an
 * integer as a size ("4 GiB"), `x-applies-when: {field: [values]}`
 * shows a field only while a sibling field holds one of the values, `x-advanced: true`
 * puts a field (or a whole nested object) under "advanced", and `x-choices: <source>` offers
 * what the data directory holds (GET /api/choices/{source}: "models", "datasets") as a pick
 * list for a text field, each with what one picks by (d_in, shape, size).
 */
import { sizeText } from "./format";
import { shapeOf, type FieldKind, type ValueKind } from "./schema/fieldKind";
import { asList, hintOf, isObject, labelOf, numberOr, resolve, unwrapNullable, type Schema } from "./schema/nodes";
import { discriminatedUnion, type Union } from "./schema/unions";

export type { FieldKind, ValueKind };

/** A map field's row: [key, value as typed]. */
export type Pair = [string, string];
/** What a field holds while it is edited: text as typed, a checkbox, a list's rows, a map's rows. */
export type FieldValue = string | boolean | string[] | Pair[];

/** Shown only while the field at `path` holds one of `values`. */
export interface Condition {
  path: string;
  values: string[];
}

export interface FieldSpec {
  /** dotted path inside `config`, as the API names it in a 422 ("dataset.path") */
  path: string;
  /** the name in the request body, when it is not `config.<path>` (the Scheduling fields') */
  apiName?: string;
  label: string;
  kind: FieldKind;
  default: FieldValue;
  hint?: string;
  options?: string[];
  /** a union's select: each variant's description, shown as the hint while it is chosen */
  optionHints?: Record<string, string>;
  /** a list's or map's rows */
  item?: ValueKind;
  /** words accepted besides a number (`int | "auto"`) */
  words?: string[];
  /** `x-unit: bytes`: shown and typed as a size ("4 GiB"), sent as typed (the API reads it) */
  unit?: "bytes";
  /** inclusive bounds, for the input's attributes */
  min?: number;
  max?: number;
  /** empty means "not set" (the schema allows null): the field is left out of the config */
  optional?: boolean;
  /** the schema has no default: the API refuses the config without it */
  required?: boolean;
  /** rarely changed: drawn under "advanced" */
  advanced?: boolean;
  /** picks from what the data directory holds: GET /api/choices/{choices} */
  choices?: string;
  /** values the text box offers to pick (a follow-up's step: the source's checkpoint steps) */
  suggestions?: string[];
  when?: Condition[];
}

export interface FieldGroup {
  /** the object's dotted path ("" for the config itself) */
  path: string;
  label: string;
  hint?: string;
  fields: FieldSpec[];
}

function valueAt(source: unknown, path: string): unknown {
  return path.split(".").reduce<unknown>((node, part) => (isObject(node) ? node[part] : undefined), source);
}

/** A config value as the field edits it: text, a checkbox, or rows. */
export function asFieldValue(value: unknown, spec: Pick<FieldSpec, "kind" | "item" | "unit">): FieldValue {
  if (spec.kind === "bool") return value === true;
  if (spec.unit === "bytes" && typeof value === "number") return sizeText(value);
  const text = (v: unknown): string => asText(v, spec.item ?? (spec.kind === "json" ? "json" : "text"));
  if (spec.kind === "list") return asList(value).map(text);
  if (spec.kind === "map") return isObject(value) ? Object.entries(value).map(([k, v]): Pair => [k, text(v)]) : [];
  return text(value);
}

/** A value as typed: JSON for a free value, unless it is a string that does not read as JSON. */
function asText(value: unknown, kind: ValueKind): string {
  if (value === undefined || value === null) return "";
  if (kind !== "json") return typeof value === "object" ? JSON.stringify(value) : String(value);
  if (typeof value === "string" && !readsAsJson(value)) return value;
  return JSON.stringify(value);
}

export function readsAsJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The sibling fields a field's `x-applies-when` names, as conditions. */
function appliesWhen(node: Schema, prefix: string): Condition[] {
  const rule = node["x-applies-when"];
  if (!isObject(rule)) return [];
  return Object.entries(rule).map(([name, values]) => ({ path: `${prefix}${name}`, values: asList(values).map(String) }));
}

interface Place {
  path: string;
  prefix: string;
  required: boolean;
  advanced: boolean;
  when: Condition[];
}

function fieldOf(name: string, node: Schema, root: Schema, defaults: unknown, place: Place): FieldSpec {
  const { schema, optional } = unwrapNullable(node, root);
  const shape = shapeOf(schema, root);
  const given = valueAt(defaults, place.path);
  const spec: FieldSpec = { path: place.path, label: labelOf(name, node), kind: shape.kind, default: "" };
  if ((node["x-unit"] ?? schema["x-unit"]) === "bytes" && shape.kind === "int") spec.unit = "bytes";
  spec.default = asFieldValue(given !== undefined ? given : schema["default"], spec);
  if (shape.item) spec.item = shape.item;
  if (shape.words) spec.words = shape.words;
  const hint = hintOf(node) ?? hintOf(schema);
  if (hint) spec.hint = hint;
  if (shape.options) spec.options = optional ? ["", ...shape.options] : shape.options;
  const bounds = shape.kind === "list" ? resolve(schema["items"], root) : schema;
  const min = numberOr(bounds["minimum"]);
  const max = numberOr(bounds["maximum"]);
  if (min !== undefined) spec.min = min;
  if (max !== undefined) spec.max = max;
  if (optional) spec.optional = true;
  if (place.required) spec.required = true;
  if (place.advanced) spec.advanced = true;
  const choices = node["x-choices"] ?? schema["x-choices"];
  if (typeof choices === "string" && shape.kind === "text") spec.choices = choices;
  const when = [...place.when, ...appliesWhen(node, place.prefix)];
  if (when.length > 0) spec.when = when;
  return spec;
}

interface Walk {
  root: Schema;
  defaults: unknown;
  groups: FieldGroup[];
}

function groupOf(path: string, name: string, node: Schema): FieldGroup {
  const group: FieldGroup = { path, label: labelOf(name, node), fields: [] };
  const hint = hintOf(node);
  if (hint) group.hint = hint;
  return group;
}

/** Adds an object's fields to `group`; its nested objects and unions become groups of their own. */
function walkObject(walk: Walk, schema: Schema, group: FieldGroup, outer: Omit<Place, "path" | "prefix" | "required">, skip?: string) {
  const prefix = group.path ? `${group.path}.` : "";
  const required = new Set(asList(schema["required"]));
  for (const [name, raw] of Object.entries(isObject(schema["properties"]) ? schema["properties"] : {})) {
    if (name === skip) continue;
    const node = resolve(raw, walk.root);
    const path = `${prefix}${name}`;
    const advanced = outer.advanced || node["x-advanced"] === true;
    const when = [...outer.when, ...appliesWhen(node, prefix)];
    const union = discriminatedUnion(node, walk.root);
    if (union) {
      walkUnion(walk, groupOf(path, name, node), union, { advanced, when });
    } else if (isObject(node["properties"])) {
      const child = groupOf(path, name, node);
      walk.groups.push(child);
      walkObject(walk, node, child, { advanced, when });
    } else {
      const place = { path, prefix, required: required.has(name) && node["default"] === undefined, advanced, when: outer.when };
      group.fields.push(fieldOf(name, node, walk.root, walk.defaults, place));
    }
  }
}

/** Each variant's description (a Pydantic model's docstring), by its value; nothing when none has one. */
function optionHintsOf(union: Union): { optionHints?: Record<string, string> } {
  const hints = union.variants.flatMap((v) => {
    const text = v.schema["description"];
    return typeof text === "string" && text.trim() ? [[v.value, text.trim().replace(/\s+/g, " ")] as const] : [];
  });
  return hints.length > 0 ? { optionHints: Object.fromEntries(hints) } : {};
}

/** A discriminated union: a select of its variants, then each variant's fields while chosen. */
function walkUnion(walk: Walk, group: FieldGroup, union: Union, outer: Omit<Place, "path" | "prefix" | "required">) {
  walk.groups.push(group);
  const selectPath = `${group.path}.${union.property}`;
  const chosen = valueAt(walk.defaults, selectPath);
  group.fields.push({
    path: selectPath,
    // not the group's label again: the group's heading says it above
    label: union.property,
    kind: "select",
    options: union.variants.map((v) => v.value),
    default: typeof chosen === "string" ? chosen : (union.variants[0]?.value ?? ""),
    ...optionHintsOf(union),
    ...(outer.advanced ? { advanced: true } : {}),
    ...(outer.when.length > 0 ? { when: outer.when } : {}),
  });
  for (const variant of union.variants) {
    const when = [...outer.when, { path: selectPath, values: [variant.value] }];
    walkObject(walk, variant.schema, group, { advanced: outer.advanced, when }, union.property);
  }
}

/**
 * The form for a config schema: the config's own fields first, then one group per nested
 * object or union, in the schema's order. `defaults` (the kind's default config) are the
 * fields' starting values where the schema gives none (a `default_factory`'s fields).
 */
export function fieldsFromSchema(schema: Record<string, unknown>, defaults: unknown = {}): FieldGroup[] {
  const top: FieldGroup = { path: "", label: "settings", fields: [] };
  const walk: Walk = { root: schema, defaults, groups: [top] };
  walkObject(walk, resolve(schema, schema), top, { advanced: false, when: [] });
  return walk.groups.filter((g) => g.fields.length > 0);
}

/** Every field of every group. */
export function allFields(groups: FieldGroup[]): FieldSpec[] {
  return groups.flatMap((g) => g.fields);
}
