// The schemas are the backend's own, dumped into src/test/kindSchemas.json (see its README
// line in docs/frontend.md), so these tests read what GET /api/kinds serves, offline.
import { describe, expect, it } from "vitest";
import kinds from "../test/kindSchemas.json";
import { defaultValues, isActive, toConfig } from "./jobForm";
import { allFields, fieldsFromSchema, type FieldSpec } from "./schemaForm";

const sae = () => fieldsFromSchema(kinds.sae.config_schema, kinds.sae.defaults);
const linreg = () => fieldsFromSchema(kinds.linreg.config_schema, kinds.linreg.defaults);
const byPath = (fields: FieldSpec[]) => Object.fromEntries(fields.map((f) => [f.path, f]));

describe("fieldsFromSchema over the sae kind's schema", () => {
  it("labels fields with the titles the kind set, and with their names otherwise", () => {
    const f = byPath(allFields(sae()));
    expect(f["steps"]?.label).toBe("steps");
    expect(f["metrics_interval"]?.label).toBe("metrics every");
    expect(f["checkpoint_interval"]?.label).toBe("checkpoint every");
    expect(f["batch_size"]?.label).toBe("batch size");
    expect(f["d_in"]?.label).toBe("d_in"); // Pydantic's own "D In" is not a title the kind chose
    expect(f["ddp.broadcast_buffers"]?.label).toBe("broadcast_buffers");
  });

  it("reads integer, number, boolean and Literal fields with their bounds and hints", () => {
    const f = byPath(allFields(sae()));
    expect(f["d_in"]).toMatchObject({ kind: "int", default: "64", min: 1, max: 65536, hint: "activation width" });
    expect(f["lr"]).toMatchObject({ kind: "float", default: "0.004", max: 10 });
    expect(f["lr"]?.min).toBeUndefined(); // exclusiveMinimum: not an inclusive bound
    expect(f["dtype"]).toMatchObject({ kind: "select", options: ["float32", "bfloat16"], default: "float32" });
    expect(f["grad_clip_norm"]).toMatchObject({ kind: "float", optional: true, default: "" });
  });

  it("makes nested models groups, resolving $ref into $defs", () => {
    const groups = sae();
    expect(groups.map((g) => [g.path, g.label])).toEqual([
      ["", "settings"],
      ["dataset", "dataset"],
      ["ddp", "DDP"],
    ]);
    const ddp = byPath(groups[2]!.fields);
    expect(ddp["ddp.bucket_cap_mb"]).toMatchObject({ kind: "float", default: "25", label: "bucket cap (MB)" });
    expect(ddp["ddp.gradient_as_bucket_view"]).toMatchObject({ kind: "bool", default: true });
  });

  it("makes the dataset union a select whose choice shows that variant's fields", () => {
    const fields = sae()[1]!.fields;
    expect(fields[0]).toMatchObject({ path: "dataset.type", kind: "select", options: ["synthetic", "file"], default: "synthetic" });
    const values = defaultValues(fields);
    const shown = (v: typeof values) => fields.filter((f) => isActive(f, v)).map((f) => f.label);
    expect(shown(values)).toEqual(["type", "true features", "active per sample", "samples"]);
    expect(shown({ ...values, "dataset.type": "file" })).toEqual(["type", "file", "tensor name"]);
    expect(byPath(fields)["dataset.tensor_name"]).toMatchObject({ kind: "text", optional: true });
  });

  it("turns the defaults back into the kind's default config, less what the architecture does not use", () => {
    const fields = allFields(sae());
    // an empty optional field (grad_clip_norm: None) is left out, and so are the fields of the
    // other architectures: the API's defaults, the same
    const {
      grad_clip_norm,
      l1_coefficient,
      l0_coefficient,
      jumprelu_bandwidth,
      jumprelu_init_threshold,
      topk_warm_up_steps,
      l1_warm_up_steps,
      batchtopk_threshold_lr,
      dead_min_frequency,
      ...topk
    } = kinds.sae.defaults;
    void [
      grad_clip_norm,
      l1_coefficient,
      l0_coefficient,
      jumprelu_bandwidth,
      jumprelu_init_threshold,
      topk_warm_up_steps,
      l1_warm_up_steps,
      batchtopk_threshold_lr,
      dead_min_frequency,
    ];
    expect(toConfig(defaultValues(fields), fields)).toEqual(topk);
  });

  it("sends the chosen variant's fields only, and leaves empty optional ones out", () => {
    const fields = allFields(sae());
    const values = { ...defaultValues(fields), "dataset.type": "file", "dataset.path": "acts.npy" };
    expect(toConfig(values, fields).dataset).toEqual({ type: "file", path: "acts.npy" });
  });
});

describe("fieldsFromSchema over the example linreg kind's schema", () => {
  it("offers its own fields, at its own defaults", () => {
    const groups = linreg();
    expect(groups).toHaveLength(1);
    const fields = groups[0]!.fields;
    expect(fields.map((f) => f.path)).toEqual(Object.keys(kinds.linreg.defaults));
    expect(byPath(fields)["checkpoint_at_end"]).toMatchObject({ kind: "bool", default: true, hint: "save the weights when done" });
    expect(toConfig(defaultValues(fields), fields)).toEqual(kinds.linreg.defaults);
  });
});

describe("fieldsFromSchema on shapes the two kinds lack", () => {
  it("tells a union's variants apart by any shared const, and an enum of one", () => {
    const schema = {
      properties: {
        source: {
          anyOf: [
            { properties: { kind: { enum: ["a"] }, x: { type: "integer" } } },
            { properties: { kind: { const: "b" }, y: { type: "string", title: "why" } } },
          ],
        },
      },
    };
    const fields = allFields(fieldsFromSchema(schema));
    expect(fields.map((f) => [f.path, f.label, f.when?.[0]?.values[0]])).toEqual([
      ["source.kind", "kind", undefined],
      ["source.x", "x", "a"],
      ["source.y", "why", "b"],
    ]);
  });

  it("takes the starting values from the defaults where the schema has none", () => {
    const schema = { properties: { inner: { $ref: "#/$defs/Inner" } }, $defs: { Inner: { properties: { n: { type: "integer" } } } } };
    expect(allFields(fieldsFromSchema(schema, { inner: { n: 7 } }))[0]).toMatchObject({ path: "inner.n", default: "7" });
  });
});
