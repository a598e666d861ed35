import { describe, expect, it } from "vitest";
import kinds from "../test/kindSchemas.json";
import { batchSplitError, defaultValues, toConfig, valuesFromConfig } from "./jobForm";
import { allFields, fieldsFromSchema } from "./schemaForm";

const fields = allFields(fieldsFromSchema(kinds.sae.config_schema, kinds.sae.defaults));

describe("jobForm", () => {
  it("sends what the user typed when it is not a number, so the API explains", () => {
    const values = { ...defaultValues(fields), d_in: "abc", steps: "" };
    const config = toConfig(values, fields);
    expect(config["d_in"]).toBe("abc");
    expect(config).not.toHaveProperty("steps");
  });

  it("reads a config back into the form; fields it lacks keep their default", () => {
    const values = valuesFromConfig(
      { d_in: 128, dataset: { type: "synthetic", num_features: 64 }, ddp: { broadcast_buffers: true } },
      fields,
    );
    expect(values["d_in"]).toBe("128");
    expect(values["dataset.num_features"]).toBe("64");
    expect(values["ddp.broadcast_buffers"]).toBe(true);
    expect(values["d_sae"]).toBe("512");
  });

  it("says when the kind's batch field does not split across the devices", () => {
    expect(batchSplitError({ batch_size: 512 }, "batch_size", 3)).toBe("512 does not split evenly across 3 devices");
    expect(batchSplitError({ batch_size: 512 }, "batch_size", 4)).toBeNull();
    expect(batchSplitError({ batch_size: 513 }, "batch_size", 1)).toBeNull();
    expect(batchSplitError({ batch_size: 513 }, null, 2)).toBeNull();
    expect(batchSplitError({ batch_size: "abc" }, "batch_size", 2)).toBeNull();
  });
});
