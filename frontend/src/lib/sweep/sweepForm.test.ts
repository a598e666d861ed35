import { describe, expect, it } from "vitest";
import type { FieldSpec } from "../schemaForm";
import { gridOf, memberCount, sortSweepErrors, splitValues, sweepBody } from "./sweepForm";

const spec = (path: string, kind: FieldSpec["kind"], extra: Partial<FieldSpec> = {}): FieldSpec => ({
  path,
  label: path,
  kind,
  default: "",
  ...extra,
});
const SPECS = new Map([
  ["k", spec("k", "int")],
  ["lr", spec("lr", "float")],
  ["architecture", spec("architecture", "select", { options: ["topk", "standard"] })],
  ["sparse_decoder", spec("sparse_decoder", "bool")],
]);

describe("the form's sweep", () => {
  it("splits values at the commas outside brackets and quotes", () => {
    expect(splitValues(" 2, 4 ,8,, 16 ")).toEqual(["2", "4", "8", "16"]);
    expect(splitValues('[1, 2], {"a": 1, "b": 2}, "x,y"')).toEqual(["[1, 2]", '{"a": 1, "b": 2}', '"x,y"']);
  });

  it("reads each value as its field reads one, and counts every combination", () => {
    const grid = gridOf(
      [
        { path: "k", text: "2, 4, 8, 16" },
        { path: "lr", text: "1e-3, 0.004" },
        { path: "architecture", text: "topk, standard" },
        { path: "sparse_decoder", text: "true, false" },
        { path: "", text: "1, 2" }, // no field chosen: left out
      ],
      SPECS,
    );
    expect(grid).toEqual({ k: [2, 4, 8, 16], lr: [0.001, 0.004], architecture: ["topk", "standard"], sparse_decoder: [true, false] });
    expect(memberCount(grid)).toBe(32);
    expect(memberCount({})).toBe(0);
    // what the browser cannot read goes as typed: the API's 422 names it
    expect(gridOf([{ path: "k", text: "2, x" }], SPECS)).toEqual({ k: [2, "x"] });
  });

  it("posts the form's job as `job`, its name as the sweep's, and max_parallel when set", () => {
    const job = { kind: "sae", config: { steps: 60 }, count: 1, name: "ks", queue: true };
    expect(sweepBody(job, { k: [2, 4] }, "2")).toEqual({
      name: "ks",
      job: { kind: "sae", config: { steps: 60 }, count: 1, queue: true },
      parameters: { grid: { k: [2, 4] } },
      max_parallel: 2,
    });
    expect(sweepBody({ kind: "sae", config: {} }, { k: [2] }, " ")).not.toHaveProperty("max_parallel");
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
});
