/**
 * A kind's form, read from its config's JSON Schema (GET /api/kinds/{kind_name}, Pydantic's
 * `model_json_schema()`): which fields, how each is edited, its label, hint and bounds. No kind
 * is named here; a kind installed with pip gets its form from its own schema.
 *
 * Read: `$ref` into `$defs`; nested objects as groups; `enum`/`const` as selects; booleans as
 * checkboxes; `integer` and `number`; `X | None` (anyOf with null) as an optional X; and a
 * discriminated union (oneOf/anyOf of objects sharing a `const` property, Pydantic's
 * `Field(discriminator=...)`) as a select whose choice shows that variant's fields.
 */

export type FieldKind = "int" | "float" | "select" | "bool" | "text";

/** Shown only while the field at `path` holds `value` (a union's variant fields). */
export interface Condition {
  path: string;
  value: string;
}

export interface FieldSpec {
  /** dotted path inside `config`, as the API names it in a 422 ("dataset.path") */
  path: string;
  label: string;
  kind: FieldKind;
  default: string | boolean;
  hint?: string;
  options?: string[];
  /** inclusive bounds, for the input's attributes */
  min?: number;
  max?: number;
  /** empty means "not set" (the schema allows null): the field is left out of the config */
  optional?: boolean;
  when?: Condition[];
}

export interface FieldGroup {
  /** the object's dotted path ("" for the config itself) */
  path: string;
  label: string;
  hint?: string;
  fields: FieldSpec[];
}

type Schema = Record<string, unknown>;

const isObject = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);
const asList = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const numberOr = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);

/** Follows `$ref: "#/$defs/Name"` (one document; Pydantic puts every model under $defs). */
function resolve(node: unknown, root: Schema): Schema {
  if (!isObject(node)) return {};
  const ref = node["$ref"];
  if (typeof ref !== "string") return node;
  const target = ref
    .replace(/^#\//, "")
    .split("/")
    .reduce<unknown>((n, part) => (isObject(n) ? n[part] : undefined), root);
  // keywords beside the $ref (a field's title, default, description) win over the target's
  const beside = Object.fromEntries(Object.entries(node).filter(([key]) => key !== "$ref"));
  return { ...resolve(target, root), ...beside };
}

/**
 * Pydantic titles a field it was not given a title for as `name.title().replace("_", " ")`
 * ("batch_size" -> "Batch Size"); such a field is labelled with its own name, as the API's
 * messages and the config call it. A title the kind set ("metrics every") is its label.
 */
function pydanticTitle(name: string): string {
  return name.replace(/[A-Za-z]+/g, (w) => w.charAt(0).toUpperCase() + w.slice(1).toLowerCase()).replace(/_/g, " ");
}

function labelOf(name: string, schema: Schema): string {
  const title = schema["title"];
  return typeof title === "string" && title !== pydanticTitle(name) ? title : name;
}

function hintOf(schema: Schema): string | undefined {
  const text = schema["description"];
  return typeof text === "string" && text.trim() ? text.trim() : undefined;
}

/** The constant a variant's discriminator property holds (`const`, or a one-value `enum`). */
function constOf(schema: Schema): string | undefined {
  if (typeof schema["const"] === "string") return schema["const"];
  const values = asList(schema["enum"]);
  return values.length === 1 && typeof values[0] === "string" ? values[0] : undefined;
}

/** `X | None`: X, marked optional. */
function unwrapNullable(schema: Schema, root: Schema): { schema: Schema; optional: boolean } {
  const members = asList(schema["anyOf"] ?? schema["oneOf"]).map((m) => resolve(m, root));
  const others = members.filter((m) => m["type"] !== "null");
  const [only] = others;
  if (only && others.length === 1 && members.length > 1) {
    const rest = Object.fromEntries(Object.entries(schema).filter(([key]) => key !== "anyOf" && key !== "oneOf"));
    return { schema: { ...only, ...rest }, optional: true };
  }
  return { schema, optional: false };
}

interface Union {
  property: string;
  variants: { value: string; schema: Schema }[];
}

/** A union of objects told apart by one `const` property, or null. */
function discriminatedUnion(schema: Schema, root: Schema): Union | null {
  const members = asList(schema["oneOf"] ?? schema["anyOf"]).map((m) => resolve(m, root));
  const properties = members.map((m) => m["properties"]).filter(isObject);
  const [first] = properties;
  if (!first || properties.length < 2 || properties.length !== members.length) return null;
  const named = isObject(schema["discriminator"]) ? schema["discriminator"]["propertyName"] : undefined;
  for (const property of typeof named === "string" ? [named] : Object.keys(first)) {
    const variants = members.flatMap((m, i) => {
      const value = constOf(resolve(properties[i]?.[property], root));
      return value === undefined ? [] : [{ value, schema: m }];
    });
    if (variants.length === members.length) return { property, variants };
  }
  return null;
}

function valueAt(source: unknown, path: string): unknown {
  return path.split(".").reduce<unknown>((node, part) => (isObject(node) ? node[part] : undefined), source);
}

function asDefault(value: unknown, kind: FieldKind): string | boolean {
  if (kind === "bool") return value === true;
  return value === undefined || value === null ? "" : String(value);
}

function kindOf(schema: Schema): { kind: FieldKind; options?: string[] } {
  const values = schema["enum"] !== undefined ? asList(schema["enum"]) : schema["const"] !== undefined ? [schema["const"]] : null;
  if (values) return { kind: "select", options: values.map(String) };
  switch (schema["type"]) {
    case "boolean":
      return { kind: "bool" };
    case "integer":
      return { kind: "int" };
    case "number":
      return { kind: "float" };
    default:
      return { kind: "text" };
  }
}

function fieldOf(name: string, path: string, node: Schema, root: Schema, defaults: unknown, when: Condition[]): FieldSpec {
  const { schema, optional } = unwrapNullable(node, root);
  const { kind, options } = kindOf(schema);
  const given = valueAt(defaults, path);
  const spec: FieldSpec = {
    path,
    label: labelOf(name, node),
    kind,
    default: asDefault(given !== undefined ? given : schema["default"], kind),
  };
  const hint = hintOf(node) ?? hintOf(schema);
  if (hint) spec.hint = hint;
  if (options) spec.options = optional ? ["", ...options] : options;
  const min = numberOr(schema["minimum"]);
  const max = numberOr(schema["maximum"]);
  if (min !== undefined) spec.min = min;
  if (max !== undefined) spec.max = max;
  if (optional) spec.optional = true;
  if (when.length > 0) spec.when = when;
  return spec;
}

interface Walk {
  root: Schema;
  defaults: unknown;
  groups: FieldGroup[];
}

/** Adds an object's fields to `group`; its nested objects and unions become groups of their own. */
function walkObject(walk: Walk, schema: Schema, group: FieldGroup, when: Condition[], skip?: string): void {
  const prefix = group.path ? `${group.path}.` : "";
  for (const [name, raw] of Object.entries(isObject(schema["properties"]) ? schema["properties"] : {})) {
    if (name === skip) continue;
    const node = resolve(raw, walk.root);
    const path = `${prefix}${name}`;
    const union = discriminatedUnion(node, walk.root);
    if (union) {
      walkUnion(walk, name, path, node, union, when);
    } else if (isObject(node["properties"])) {
      const child: FieldGroup = { path, label: labelOf(name, node), fields: [] };
      const hint = hintOf(node);
      if (hint) child.hint = hint;
      walk.groups.push(child);
      walkObject(walk, node, child, when);
    } else {
      group.fields.push(fieldOf(name, path, node, walk.root, walk.defaults, when));
    }
  }
}

/** A discriminated union: a select of its variants, then each variant's fields while chosen. */
function walkUnion(walk: Walk, name: string, path: string, node: Schema, union: Union, when: Condition[]): void {
  const group: FieldGroup = { path, label: labelOf(name, node), fields: [] };
  const hint = hintOf(node);
  if (hint) group.hint = hint;
  walk.groups.push(group);
  const selectPath = `${path}.${union.property}`;
  const chosen = valueAt(walk.defaults, selectPath);
  group.fields.push({
    path: selectPath,
    label: labelOf(name, node),
    kind: "select",
    options: union.variants.map((v) => v.value),
    default: typeof chosen === "string" ? chosen : (union.variants[0]?.value ?? ""),
    ...(when.length > 0 ? { when } : {}),
  });
  for (const variant of union.variants) {
    walkObject(walk, variant.schema, group, [...when, { path: selectPath, value: variant.value }], union.property);
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
  walkObject(walk, resolve(schema, schema), top, []);
  return walk.groups.filter((g) => g.fields.length > 0);
}

/** Every field of every group. */
export function allFields(groups: FieldGroup[]): FieldSpec[] {
  return groups.flatMap((g) => g.fields);
}
