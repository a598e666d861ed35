/**
 * The unions a config schema holds, beside `X | None` (./nodes): a union of objects told apart by
 * one constant property (Pydantic's `Field(discriminator=...)`), and a value or a few words
 * (`int | Literal["auto"]`).
 */
import { constOf, isObject, members, resolve, type Schema } from "./nodes";

export interface Union {
  property: string;
  variants: { value: string; schema: Schema }[];
}

/** A union of objects told apart by one `const` property, or null. */
export function discriminatedUnion(schema: Schema, root: Schema): Union | null {
  const all = members(schema, root);
  const properties = all.map((m) => m["properties"]).filter(isObject);
  const [first] = properties;
  if (!first || properties.length < 2 || properties.length !== all.length) return null;
  const named = isObject(schema["discriminator"]) ? schema["discriminator"]["propertyName"] : undefined;
  for (const property of typeof named === "string" ? [named] : Object.keys(first)) {
    const variants = all.flatMap((m, i) => {
      const value = constOf(resolve(properties[i]?.[property], root));
      return value === undefined ? [] : [{ value, schema: m }];
    });
    if (variants.length === all.length) return { property, variants };
  }
  return null;
}

/**
 * A value or one of a few words (`int | Literal["auto"]`): the value's schema and the words,
 * or null for any other union.
 */
export function valueOrWords(schema: Schema, root: Schema): { value: Schema; words: string[] } | null {
  const all = members(schema, root);
  const words = all.map(constOf);
  const values = all.filter((_, i) => words[i] === undefined);
  const [value] = values;
  if (!value || values.length !== 1 || all.length < 2) return null;
  return { value, words: words.filter((w): w is string => w !== undefined) };
}
