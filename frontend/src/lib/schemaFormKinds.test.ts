// The built-in kinds whose configs hold lists, maps, unions and required fields (script, map,
// activations), and the sae kind's per-architecture and advanced fields, read from their real
// schemas (src/test/kindSchemas.json): the untouched form makes a config the API accepts.
import { describe, expect, it } from "vitest";
import kinds from "../test/kindSchemas.json";
import { configValue } from "./fieldValues";
import { defaultValues, isActive, toConfig, valuesFromConfig } from "./jobForm";
import { allFields, fieldsFromSchema, type FieldSpec } from "./schemaForm";

type KindName = keyof typeof kinds;
const fieldsOf = (kind: KindName) => allFields(fieldsFromSchema(kinds[kind].config_schema, kinds[kind].defaults));
const byPath = (fields: FieldSpec[]) => Object.fromEntries(fields.map((f) => [f.path, f]));

describe("script: lists and maps are rows, sent as a list and an object", () => {
  const fields = fieldsOf("script");
  it("reads args as a list of text and env as key/value rows", () => {
    const f = byPath(fields);
    expect(f["args"]).toMatchObject({ kind: "list", item: "text", default: [] });
    expect(f["env"]).toMatchObject({ kind: "map", item: "text", default: [] });
    expect(f["entrypoint"]).toMatchObject({ kind: "text", optional: true });
  });
  it("sends [] and {} untouched (was the strings '' and '[object Object]'), rows as typed", () => {
    expect(toConfig(defaultValues(fields), fields)).toMatchObject({ args: [], env: {} });
    const values = {
      ...defaultValues(fields),
      entrypoint: "train.py",
      args: ["--steps", "20"],
      env: [["SEED", "3"]] as [string, string][],
    };
    expect(toConfig(values, fields)).toMatchObject({ entrypoint: "train.py", args: ["--steps", "20"], env: { SEED: "3" } });
  });
  it("reads a job's config back into rows", () => {
    const values = valuesFromConfig({ module: "m", args: ["-v"], env: { A: "1" } }, fields);
    expect(values["args"]).toEqual(["-v"]);
    expect(values["env"]).toEqual([["A", "1"]]);
  });
});

describe("map: free JSON values, a number or a word, optional lists, required fields", () => {
  const fields = fieldsOf("map");
  const f = byPath(fields);
  it("reads each field's shape", () => {
    expect(f["kwargs"]).toMatchObject({ kind: "map", item: "json" });
    expect(f["map.batch_size"]).toMatchObject({ kind: "int", words: ["auto"], default: "32" });
    expect(f["map.free_memory_bytes"]).toMatchObject({ kind: "list", item: "int", optional: true, min: 0 });
    expect(f["function"]).toMatchObject({ kind: "text", required: true });
  });
  it("sends kwargs as JSON values (text when it is not JSON), 'auto' as a word, numbers as numbers", () => {
    const values = {
      ...defaultValues(fields),
      function: "m:f",
      input: "in.jsonl",
      output: "out",
      kwargs: [
        ["pause_s", "0.5"],
        ["mode", "fast"],
        ["", "ignored"],
      ] as [string, string][],
      "map.batch_size": "auto",
    };
    const config = toConfig(values, fields);
    expect(config).toMatchObject({ function: "m:f", kwargs: { pause_s: 0.5, mode: "fast" }, map: { batch_size: "auto", chunk_size: 256 } });
    expect(config["map"]).not.toHaveProperty("free_memory_bytes");
    expect(configValue(f["map.free_memory_bytes"]!, ["100", "2e3"])).toEqual([100, 2000]);
  });
  it("leaves an empty required field out, so the API names it", () => {
    expect(toConfig(defaultValues(fields), fields)).not.toHaveProperty("function");
  });
});

describe("activations: selects and a nested map group", () => {
  it("makes a config from its defaults and the required paths", () => {
    const fields = fieldsOf("activations");
    const values = { ...defaultValues(fields), model: "gpt2-tiny", input: "ids.npy", hook: "transformer.h.0", output: "acts" };
    const config = toConfig(values, fields);
    expect(config).toMatchObject({ model: "gpt2-tiny", hook_io: "output", positions: "all", map: { strategy: "balanced" } });
    expect(byPath(fields)["dtype"]).toMatchObject({ kind: "select", options: ["float32", "bfloat16", "float16"] });
  });
});

describe("sae: fields by architecture, and advanced ones", () => {
  const fields = fieldsOf("sae");
  const shown = (architecture: string) => fields.filter((f) => isActive(f, { ...defaultValues(fields), architecture })).map((f) => f.path);
  it("shows each architecture its own fields only", () => {
    expect(shown("standard")).toContain("l1_coefficient");
    expect(shown("standard")).not.toContain("k");
    expect(shown("standard")).not.toContain("sparse_decoder");
    expect(shown("jumprelu")).toEqual(expect.arrayContaining(["l0_coefficient", "jumprelu_bandwidth", "k", "topk_warm_up_steps"]));
    expect(shown("topk")).not.toContain("l0_coefficient");
    expect(shown("topk")).not.toContain("topk_warm_up_steps");
    expect(shown("batchtopk")).toContain("batchtopk_threshold_lr");
    expect(shown("topk").length).toBeLessThan(fields.length - 6);
  });
  it("marks rarely changed fields advanced, a nested object's fields with it", () => {
    const f = byPath(fields);
    expect(f["adam_beta1"]?.advanced).toBe(true);
    expect(f["ddp.bucket_cap_mb"]?.advanced).toBe(true);
    expect(f["steps"]?.advanced).toBeUndefined();
    expect(f["architecture"]?.advanced).toBeUndefined();
  });
});

describe("a number of either kind", () => {
  it("reads int | float (| None) as one number box, sending 300 and 0.2 as typed", () => {
    const schema = {
      properties: {
        warm_up: { anyOf: [{ type: "integer", minimum: 0 }, { type: "number", maximum: 1 }, { type: "null" }], default: null },
      },
    };
    const fields = allFields(fieldsFromSchema(schema));
    expect(fields[0]).toMatchObject({ kind: "float", optional: true, default: "" });
    expect(configValue(fields[0]!, "300")).toBe(300);
    expect(configValue(fields[0]!, "0.2")).toBe(0.2);
    expect(configValue(fields[0]!, "")).toBeUndefined();
  });
});

describe("sae_eval: a required job, an optional step, a union of rows", () => {
  const fields = fieldsOf("sae_eval");
  it("makes the follow-up's config from the form prefilled with it (step empty: the newest)", () => {
    const values = valuesFromConfig({ source_job: 12, dataset: { type: "heldout" } }, fields);
    const config = toConfig(values, fields);
    expect(config).toMatchObject({ source_job: 12, dataset: { type: "heldout" }, batch_size: 4096 });
    expect(config["step"] ?? null).toBeNull();
    expect(config["dataset"]).not.toHaveProperty("path");
  });
  it("sends a step and a file when they are set", () => {
    const values = { ...valuesFromConfig({ source_job: 12 }, fields), step: "500", "dataset.type": "file", "dataset.path": "acts/x.npy" };
    expect(toConfig(values, fields)).toMatchObject({ source_job: 12, step: 500, dataset: { type: "file", path: "acts/x.npy" } });
  });
  it("offers loss recovered as a choice, off by default, its model fields while on", () => {
    const f = byPath(fields);
    expect(f["loss_recovered.type"]).toMatchObject({ kind: "select", options: ["off", "lm"], default: "off" });
    expect(f["loss_recovered.type"]?.optionHints?.["off"]).toBe("No language model: the SAE is scored on activation rows only.");
    expect(f["loss_recovered.model"]).toMatchObject({ label: "model", choices: "models" });
    expect(f["loss_recovered.max_sequences"]).toMatchObject({ label: "sequences", min: 1, max: 1_000_000 });
    expect(toConfig(valuesFromConfig({ source_job: 12 }, fields), fields)).toMatchObject({ loss_recovered: { type: "off" } });
    const lm = { type: "lm", model: "gpt2", input: "ids.npy", hook: "transformer.h.6", context_length: 64 };
    const config = toConfig(valuesFromConfig({ source_job: 12, loss_recovered: lm }, fields), fields);
    expect(config["loss_recovered"]).toMatchObject({ ...lm, hook_io: "output", max_sequences: 256 });
  });
});
