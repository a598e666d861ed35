import { describe, expect, it } from "vitest";
import { sortSweepErrors, splitValues, sweepBody } from "./sweepForm";

describe("the form's sweep", () => {
  it("splits values at the commas outside brackets and quotes", () => {
    expect(splitValues(" 2, 4 ,8,, 16 ")).toEqual(["2", "4", "8", "16"]);
    expect(splitValues('[1, 2], {"a": 1, "b": 2}, "x,y"')).toEqual(["[1, 2]", '{"a": 1, "b": 2}', '"x,y"']);
  });

  it("posts the form's job as `job`, its name as the sweep's, and max_parallel when set", () => {
    const job = { kind: "sae", config: { steps: 60 }, count: 1, name: "ks", queue: true };
    expect(sweepBody(job, { grid: { k: [2, 4] } }, "2")).toEqual({
      name: "ks",
      job: { kind: "sae", config: { steps: 60 }, count: 1, queue: true },
      parameters: { grid: { k: [2, 4] } },
      max_parallel: 2,
    });
    expect(sweepBody({ kind: "sae", config: {} }, { grid: { k: [2] } }, " ")).not.toHaveProperty("max_parallel");
  });

  it("puts a bad member's message beside the field it varies, the base job's beside the form's field", () => {
    const sorted = sortSweepErrors(
      {
        "members[1].k": "k (65) must be at most d_sae (64) (member 1: k=65)",
        "members[2].config": "does not fit (member 2: d_in=32768)",
        "job.config.d_in": "Input should be greater than or equal to 1",
        max_parallel: "Input should be greater than or equal to 1",
      },
      ["k", "d_in"],
    );
    expect(sorted.rows).toEqual({ k: "k (65) must be at most d_sae (64) (member 1: k=65)" });
    expect(sorted.job).toEqual({ "config.d_in": "Input should be greater than or equal to 1" });
    expect(sorted.maxParallel).toBe("Input should be greater than or equal to 1");
    expect(sorted.sweep).toEqual(["does not fit (member 2: d_in=32768)"]);
  });

  it("puts the API's word on a random row, its draws and its seed beside them", () => {
    const sorted = sortSweepErrors(
      {
        "parameters.random.lr": "Value error, log_uniform needs low above 0",
        "parameters.zip.dataset.num_features": "Input should be a valid list",
        "members[3].config.lr": "Input should be less than 1 (member 3: lr=2.5)",
        "parameters.count": "Input should be greater than or equal to 1",
        "parameters.seed": "Input should be a valid integer",
      },
      ["lr", "dataset.num_features"],
    );
    expect(sorted.rows).toEqual({
      lr: "Value error, log_uniform needs low above 0; Input should be less than 1 (member 3: lr=2.5)",
      "dataset.num_features": "Input should be a valid list",
    });
    expect(sorted.draws).toBe("Input should be greater than or equal to 1");
    expect(sorted.seed).toBe("Input should be a valid integer");
    expect(sorted.sweep).toEqual([]);
  });
});
