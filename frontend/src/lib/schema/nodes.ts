/**
 * Reading one node of a Pydantic JSON Schema: `$ref`s, `X | None`, labels and hints. Shared by
 * the form's walk (lib/schemaForm) and its field kinds (./fieldKind).
 */

export type Schema = Record<string, unknown>;

export const isObject = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);
export const asList = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
export const numberOr = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);

/** Follows `$ref: "#/$defs/Name"` (one document; Pydantic puts every model under $defs). */
export function resolve(node: unknown, root: Schema): Schema {
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

/** The members of an `anyOf`/`oneOf`, resolved; [] for a node that is no union. */
export function members(schema: Schema, root: Schema): Schema[] {
  return asList(schema["anyOf"] ?? schema["oneOf"]).map((m) => resolve(m, root));
}

/** `X | None`: X, marked optional (keywords beside the union, e.g. its default, kept). */
export function unwrapNullable(schema: Schema, root: Schema): { schema: Schema; optional: boolean } {
  const all = members(schema, root);
  const others = all.filter((m) => m["type"] !== "null");
  if (others.length === all.length) return { schema, optional: false };
  const rest = Object.fromEntries(Object.entries(schema).filter(([key]) => key !== "anyOf" && key !== "oneOf"));
  const [only] = others;
  if (only && others.length === 1) return { schema: { ...only, ...rest }, optional: true };
  return { schema: { ...rest, anyOf: others }, optional: true };
}

/** The constant a variant's discriminator property holds (`const`, or a one-value `enum`). */
export function constOf(schema: Schema): string | undefined {
  if (typeof schema["const"] === "string") return schema["const"];
  const values = asList(schema["enum"]);
  return values.length === 1 && typeof values[0] === "string" ? values[0] : undefined;
}

/**
 * Pydantic titles a field it was not given a title for as `name.title().replace("_", " ")`
 * ("batch_size" -> "Batch Size"); such a field is labelled with its own name, as the API's
 * messages and the config call it. A title the kind set ("metrics every") is its label.
 */
function pydanticTitle(name: string): string {
  return name.replace(/[A-Za-z]+/g, (w) => w.charAt(0).toUpperCase() + w.slice(1).toLowerCase()).replace(/_/g, " ");
}

export function labelOf(name: string, schema: Schema): string {
  const title = schema["title"];
  return typeof title === "string" && title !== pydanticTitle(name) ? title : name;
}

export function hintOf(schema: Schema): string | undefined {
  const text = schema["description"];
  return typeof text === "string" && text.trim() ? text.trim() : undefined;
}
