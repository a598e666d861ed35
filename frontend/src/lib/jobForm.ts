/**
 * The new-job form as data: the fields of the `sae` kind, their defaults (SaeConfig's), and the
 * conversion from what the user typed to the config the API validates. Values the browser cannot
 * read as numbers are sent as typed, so the API's own message explains what is wrong.
 */
import type { SaeConfig } from "../client/types";

export type FieldKind = "int" | "float" | "select" | "bool" | "text";

export interface FieldSpec {
  /** dotted path inside `config` */
  path: string;
  label: string;
  kind: FieldKind;
  default: string | boolean;
  hint?: string;
  options?: string[];
  group: "model" | "training" | "dataset" | "synthetic" | "file" | "ddp";
}

export const SAE_FIELDS: FieldSpec[] = [
  { path: "d_in", label: "d_in", kind: "int", default: "64", hint: "activation width", group: "model" },
  { path: "d_sae", label: "d_sae", kind: "int", default: "512", hint: "dictionary size", group: "model" },
  { path: "dtype", label: "dtype", kind: "select", default: "float32", options: ["float32", "bfloat16"], group: "model" },
  { path: "l1_coefficient", label: "L1 coefficient", kind: "float", default: "0.001", group: "training" },
  { path: "lr", label: "learning rate", kind: "float", default: "0.001", group: "training" },
  { path: "batch_size", label: "batch size", kind: "int", default: "4096", hint: "global, split across ranks", group: "training" },
  { path: "steps", label: "steps", kind: "int", default: "2000", group: "training" },
  { path: "seed", label: "seed", kind: "int", default: "0", group: "training" },
  { path: "checkpoint_interval", label: "checkpoint every", kind: "int", default: "500", hint: "steps", group: "training" },
  { path: "metrics_interval", label: "metrics every", kind: "int", default: "10", hint: "steps", group: "training" },
  { path: "dataset.type", label: "dataset", kind: "select", default: "synthetic", options: ["synthetic", "file"], group: "dataset" },
  { path: "dataset.num_features", label: "true features", kind: "int", default: "512", group: "synthetic" },
  { path: "dataset.active_features", label: "active per sample", kind: "float", default: "5", group: "synthetic" },
  { path: "dataset.num_samples", label: "samples", kind: "int", default: "1000000", group: "synthetic" },
  { path: "dataset.path", label: "file", kind: "text", default: "", hint: "under <data_dir>/datasets, .safetensors or .npy", group: "file" },
  { path: "dataset.tensor_name", label: "tensor name", kind: "text", default: "", hint: "optional, .safetensors only", group: "file" },
  { path: "ddp.bucket_cap_mb", label: "bucket cap (MB)", kind: "float", default: "25", group: "ddp" },
  { path: "ddp.gradient_as_bucket_view", label: "gradient as bucket view", kind: "bool", default: true, group: "ddp" },
  { path: "ddp.broadcast_buffers", label: "broadcast buffers", kind: "bool", default: false, group: "ddp" },
];

export type FormValues = Record<string, string | boolean>;

export function defaultValues(fields: FieldSpec[] = SAE_FIELDS): FormValues {
  return Object.fromEntries(fields.map((f) => [f.path, f.default]));
}

function getPath(source: unknown, path: string): unknown {
  return path.split(".").reduce<unknown>((node, part) => (node && typeof node === "object" ? (node as Record<string, unknown>)[part] : undefined), source);
}

/** Form values from a config (the API's defaults, GET /api/kinds/sae/defaults); missing fields keep theirs. */
export function valuesFromConfig(config: unknown, fields: FieldSpec[] = SAE_FIELDS): FormValues {
  return Object.fromEntries(
    fields.map((f) => {
      const value = getPath(config, f.path);
      if (value === undefined || value === null) return [f.path, f.default];
      return [f.path, f.kind === "bool" ? Boolean(value) : String(value)];
    }),
  );
}

function parse(spec: FieldSpec, raw: string | boolean): unknown {
  if (spec.kind === "bool") return Boolean(raw);
  const text = String(raw).trim();
  if (spec.kind === "int" || spec.kind === "float") {
    if (text === "") return undefined;
    const n = Number(text);
    return Number.isFinite(n) ? n : text;
  }
  return text;
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

/** Whether a field applies, given the values (dataset fields follow the dataset type). */
export function isActive(spec: FieldSpec, values: FormValues): boolean {
  if (spec.group === "synthetic") return values["dataset.type"] === "synthetic";
  if (spec.group === "file") return values["dataset.type"] === "file";
  return true;
}

export function toConfig(values: FormValues, fields: FieldSpec[] = SAE_FIELDS): SaeConfig {
  const config: Record<string, unknown> = {};
  for (const spec of fields) {
    if (!isActive(spec, values)) continue;
    const value = parse(spec, values[spec.path] ?? spec.default);
    if (value === undefined) continue;
    if (spec.path === "dataset.tensor_name" && value === "") continue;
    setPath(config, spec.path, value);
  }
  return config as SaeConfig;
}
