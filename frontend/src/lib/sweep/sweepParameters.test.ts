import { describe, expect, it } from "vitest";
import type { FieldSpec } from "../schemaForm";
import { distributionFor, emptyRow, planSweep, type SweepRow } from "./sweepParameters";

const spec = (path: string, kind: FieldSpec["kind"], extra: Partial<FieldSpec> = {}): FieldSpec => ({
  path,
  label: path,
  kind,
  default: "",
  ...extra,
});
const SPECS = new Map([
  ["k", spec("k", "int", { min: 1 })],
  ["d_sae", spec("d_sae", "int")],
  ["lr", spec("lr", "float")],
  ["architecture", spec("architecture", "select", { options: ["topk", "standard"] })],
  ["sparse_decoder", spec("sparse_decoder", "bool")],
]);
const row = (path: string, extra: Partial<SweepRow>): SweepRow => ({ ...emptyRow(), path, ...extra });
const plan = (rows: SweepRow[], draws = "", seed = "") => planSweep(rows, SPECS, draws, seed);

describe("the sweep's rows as parameters", () => {
  it("reads each grid value as its field reads one, and counts every combination", () => {
    const got = plan([
      row("k", { text: "2, 4, 8, 16" }),
      row("lr", { text: "1e-3, 0.004" }),
      row("architecture", { text: "topk, standard" }),
      row("sparse_decoder", { text: "true, false" }),
      row("", { text: "1, 2" }), // no field chosen: left out
    ]);
    expect(got.parameters).toEqual({
      grid: { k: [2, 4, 8, 16], lr: [0.001, 0.004], architecture: ["topk", "standard"], sparse_decoder: [true, false] },
    });
    expect(got.count).toBe(32);
    expect(plan([emptyRow()])).toMatchObject({ count: 0, blocker: "Give the sweep a field and its values." });
  });

  it("checks each value against its field's type and bounds, naming every bad one, before anything is sent", () => {
    const bad = plan([row("k", { text: "2, x, -1, 2.5" }), row("architecture", { text: "topk, relu" })], "", "");
    expect(bad.rowErrors).toEqual({
      k: '"x" is not a number; -1 is below 1, the least k takes; 2.5 is not a whole number',
      architecture: '"relu" is not one of topk, standard',
    });
    expect(bad).toMatchObject({ count: 0, blocker: "Fix the rows marked above (k, architecture)." });
    expect(bad.parameters.grid).toEqual({});
    expect(plan([row("sparse_decoder", { text: "true, yes" })]).rowErrors).toEqual({ sparse_decoder: '"yes" is not true or false' });
    expect(plan([row("k", { mode: "random", distribution: "int", low: "0", high: "4" })], "2").rowErrors).toEqual({
      k: "0 is below 1, the least k takes",
    });
  });

  it("advances rows in step together, crossed with the grid, and refuses lists of different lengths", () => {
    const got = plan([
      row("k", { mode: "zip", text: "8, 16, 32" }),
      row("d_sae", { mode: "zip", text: "64, 128, 256" }),
      row("lr", { text: "1e-3, 4e-3" }),
    ]);
    expect(got.parameters).toEqual({ grid: { lr: [0.001, 0.004] }, zip: { k: [8, 16, 32], d_sae: [64, 128, 256] } });
    expect(got.count).toBe(6);
    const uneven = plan([row("k", { mode: "zip", text: "8, 16, 32" }), row("d_sae", { mode: "zip", text: "64, 128" })]);
    expect(uneven.count).toBe(0);
    expect(uneven.rowErrors).toEqual({
      k: "rows in step need the same number of values: k has 3, d_sae has 2",
      d_sae: "rows in step need the same number of values: k has 3, d_sae has 2",
    });
    expect(uneven.blocker).toBe("Fix the rows marked above (k, d_sae).");
  });

  it("draws random rows `draws` times for each combination, with the seed when given", () => {
    const got = plan(
      [
        row("lr", { mode: "random", distribution: "log_uniform", low: "1e-4", high: "1e-2" }),
        row("k", { mode: "random", distribution: "int", low: "4", high: "64" }),
        row("architecture", { mode: "random", distribution: "choice", text: "topk, standard" }),
        row("sparse_decoder", { text: "true, false" }),
      ],
      "5",
      "7",
    );
    expect(got.parameters).toEqual({
      grid: { sparse_decoder: [true, false] },
      random: {
        lr: { distribution: "log_uniform", low: 0.0001, high: 0.01 },
        k: { distribution: "int", low: 4, high: 64 },
        architecture: { distribution: "choice", values: ["topk", "standard"] },
      },
      count: 5,
      seed: 7,
    });
    expect(got.count).toBe(10);
    expect(plan([row("lr", { mode: "random", low: "0", high: "1" })], "3").parameters).not.toHaveProperty("seed");
    expect(plan([row("lr", { mode: "random", low: "0", high: "1" })], "")).toMatchObject({
      count: 0,
      blocker: "Say how many members to draw.",
    });
  });

  it("says what is wrong with a random row's bounds before anything is sent", () => {
    const wrong = (extra: Partial<SweepRow>, path = "lr") => plan([row(path, { mode: "random", ...extra })], "4").rowErrors[path];
    expect(wrong({ low: "1", high: "0.5" })).toBe("low 1 is above high 0.5");
    expect(wrong({ distribution: "log_uniform", low: "0", high: "1" })).toBe("log-uniform needs low above 0");
    expect(wrong({ distribution: "log_uniform", low: "0", high: "-1" })).toBe("log-uniform needs low above 0");
    expect(wrong({ distribution: "int", low: "1.5", high: "4" }, "k")).toBe("whole number takes whole numbers for low and high");
    expect(wrong({ distribution: "uniform", low: "1", high: "4" }, "k")).toBe("k takes whole numbers: draw it as a whole number");
    expect(wrong({ low: "a", high: "1" })).toBe("low and high are numbers");
    expect(wrong({ low: "", high: "1" })).toBeUndefined(); // not yet typed: no member, no message
    expect([spec("k", "int"), spec("lr", "float"), spec("a", "select")].map(distributionFor)).toEqual(["int", "log_uniform", "choice"]);
    // rates and coefficients are drawn over decades; another number uniformly
    const floats = ["weight_decay", "optim.lr", "l1_coefficient", "dropout", "alpha"].map((p) => distributionFor(spec(p, "float")));
    expect(floats).toEqual(["log_uniform", "log_uniform", "log_uniform", "uniform", "uniform"]);
    expect(distributionFor({ ...spec("eta", "float"), label: "learning rate" })).toBe("log_uniform");
  });
});
