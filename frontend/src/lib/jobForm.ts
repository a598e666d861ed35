/**
 * The new-job form's values: from the kind's fields (lib/schemaForm) to what the user typed and
 * back to the config the API validates (each field's reading: lib/fieldValues).
 */
import type { KindConfig } from "../client/types";
import { configValue } from "./fieldValues";
import { asFieldValue, type FieldGroup, type FieldSpec, type FieldValue } from "./schemaForm";

export type FormValues = Record<string, FieldValue>;

export function defaultValues(fields: FieldSpec[]): FormValues {
  return Object.fromEntries(fields.map((f) => [f.path, f.default]));
}

function getPath(source: unknown, path: string): unknown {
  return path
    .split(".")
    .reduce<unknown>((node, part) => (node && typeof node === "object" ? (node as Record<string, unknown>)[part] : undefined), source);
}

/** Form values from a config (e.g. a job's, to run it again); fields it lacks keep their default. */
export function valuesFromConfig(config: unknown, fields: FieldSpec[]): FormValues {
  return Object.fromEntries(
    fields.map((f) => {
      const value = getPath(config, f.path);
      return [f.path, value === undefined || value === null ? f.default : asFieldValue(value, f)];
    }),
  );
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split(".");
  let node = target;
  for (const part of parts.slice(0, -1)) {
    node[part] = (node[part] as Record<string, unknown> | undefined) ?? {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts[parts.length - 1] as string] = value;
}

/** Whether a field applies, given the values (a union variant's fields follow its select). */
export function isActive(spec: FieldSpec, values: FormValues): boolean {
  return (spec.when ?? []).every((c) => c.values.includes(String(values[c.path])));
}

/** The config the values make: the fields that apply now, each as the API reads it. */
export function toConfig(values: FormValues, fields: FieldSpec[]): KindConfig {
  const config: Record<string, unknown> = {};
  for (const spec of fields) {
    if (!isActive(spec, values)) continue;
    const value = configValue(spec, values[spec.path] ?? spec.default);
    if (value === undefined) continue;
    setPath(config, spec.path, value);
  }
  return config;
}

/**
 * The API refuses a global batch that does not split evenly across the job's devices (the
 * kind names its batch field): say so beside the field before the user submits.
 */
export function batchSplitError(config: KindConfig, batchField: string | null | undefined, worldSize: number): string | null {
  if (!batchField || worldSize <= 1) return null;
  const batch = getPath(config, batchField);
  if (typeof batch !== "number" || !Number.isInteger(batch) || batch % worldSize === 0) return null;
  return `${batch} does not split evenly across ${worldSize} devices`;
}

/** The groups with `path`'s text box offering `values` to pick (a follow-up's checkpoint step:
 * the steps its source has written); unchanged when there is no such field or nothing to offer. */
export function offerValues(groups: FieldGroup[], path: string | null, values: string[] | undefined): FieldGroup[] {
  if (path === null || !values?.length) return groups;
  return groups.map((g) => ({ ...g, fields: g.fields.map((f) => (f.path === path ? { ...f, suggestions: values } : f)) }));
}
