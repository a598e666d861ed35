/**
 * A field's value as typed, read back into the value the config sends. What the browser cannot
 * read (a number typed "1e", JSON with a typo) is sent as typed, so the API's own message,
 * shown beside the field, says what is wrong.
 */
import { readsAsJson, type FieldSpec, type FieldValue, type ValueKind } from "./schemaForm";

/** One typed value: a number when it reads as one, JSON for a free value, else the text. */
export function readValue(text: string, kind: ValueKind, words: string[] = []): unknown {
  if (words.includes(text)) return text;
  if (kind === "int" || kind === "float") {
    const n = Number(text);
    return text !== "" && Number.isFinite(n) ? n : text;
  }
  if (kind === "json") return readsAsJson(text) ? (JSON.parse(text) as unknown) : text;
  return text;
}

function rows(raw: FieldValue): unknown[] {
  return Array.isArray(raw) ? raw : [];
}

/**
 * The config value of one field, or undefined to leave it out (so the API applies its default,
 * or names a required field): an empty optional field, an empty number, an empty required text.
 */
export function configValue(spec: FieldSpec, raw: FieldValue): unknown {
  const item = spec.item ?? "text";
  if (spec.kind === "bool") return Boolean(raw);
  if (spec.kind === "list") {
    const values = rows(raw).map((r) => readValue(String(r).trim(), item));
    return values.length === 0 && spec.optional ? undefined : values;
  }
  if (spec.kind === "map") {
    const pairs = rows(raw).filter((p): p is [string, string] => Array.isArray(p) && String(p[0]).trim() !== "");
    if (pairs.length === 0 && spec.optional) return undefined;
    return Object.fromEntries(pairs.map(([k, v]) => [k.trim(), readValue(v.trim(), item)]));
  }
  const text = String(raw).trim();
  const numeric = spec.kind === "int" || spec.kind === "float";
  if (text === "" && (spec.optional || spec.required || numeric || spec.kind === "json")) return undefined;
  if (spec.kind === "select") return text;
  return readValue(text, spec.kind, spec.words);
}
