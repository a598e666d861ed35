import { describe, expect, it } from "vitest";
import { defaultValues, toConfig, valuesFromConfig } from "./jobForm";

describe("jobForm", () => {
  it("turns the defaults into a config the API accepts", () => {
    const config = toConfig(defaultValues());
    expect(config).toMatchObject({
      d_in: 64,
      d_sae: 512,
      dtype: "float32",
      dataset: { type: "synthetic", num_features: 512 },
      ddp: { bucket_cap_mb: 25, gradient_as_bucket_view: true, broadcast_buffers: false },
    });
    expect(config.dataset).not.toHaveProperty("path");
  });

  it("sends what the user typed when it is not a number, so the API explains", () => {
    const values = { ...defaultValues(), d_in: "abc", steps: "" };
    const config = toConfig(values) as Record<string, unknown>;
    expect(config["d_in"]).toBe("abc");
    expect(config).not.toHaveProperty("steps");
  });

  it("starts from the API's defaults", () => {
    const values = valuesFromConfig({ d_in: 128, dataset: { type: "synthetic", num_features: 64 }, ddp: { broadcast_buffers: true } });
    expect(values["d_in"]).toBe("128");
    expect(values["dataset.num_features"]).toBe("64");
    expect(values["ddp.broadcast_buffers"]).toBe(true);
    expect(values["d_sae"]).toBe("512");
  });

  it("keeps only the fields of the chosen dataset type", () => {
    const values = { ...defaultValues(), "dataset.type": "file", "dataset.path": "acts.npy" };
    expect(toConfig(values).dataset).toEqual({ type: "file", path: "acts.npy" });
  });
});
