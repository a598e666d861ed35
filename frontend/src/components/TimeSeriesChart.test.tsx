import { render } from "@testing-library/react";
import uPlot from "uplot";
import { describe, expect, it } from "vitest";
import { MetricChart } from "./LossChart";
import type { MetricPoint } from "../client/types";

type Recorded = { opts: uPlot.Options; data: uPlot.AlignedData };
const instances = () => (uPlot as unknown as { instances: Recorded[] }).instances;

/** Whether uPlot would mark the points of chart series `i` (1-based) over every row. */
function marksPoints(plot: Recorded, i: number): boolean {
  const show = plot.opts.series[i]?.points?.show;
  const rows = (plot.data[0] ?? []).length;
  return typeof show === "function" ? Boolean(show(plot as unknown as uPlot, i, 0, rows - 1)) : Boolean(show);
}

const at = new Date().toISOString();
const row = (step: number, metrics: Record<string, number>): MetricPoint => ({ step, metrics, created_at: at });

describe("MetricChart", () => {
  it("marks the values of a series measured at one checkpoint, which a line alone would not draw", () => {
    // 40 metric rows; the held-out figure only at the one checkpoint (step 400)
    const points = Array.from({ length: 40 }, (_, i) =>
      row((i + 1) * 10, i === 39 ? { explained_variance: 0.9, heldout: 0.8 } : { explained_variance: 0.9 }),
    );
    const metrics = [
      { name: "explained_variance", label: "train", color: "#111" },
      { name: "heldout", label: "held-out", color: "#222" },
    ];
    render(<MetricChart title="Held-out rows" points={points} metrics={metrics} />);
    const plot = instances().at(-1)!;
    expect(marksPoints(plot, 2)).toBe(true); // the one held-out value: a dot
    expect(marksPoints(plot, 1)).toBe(false); // a value on every row: the line alone
  });

  it("marks a series measured at a few checkpoints among many rows", () => {
    const points = Array.from({ length: 30 }, (_, i) => row(i + 1, (i + 1) % 10 === 0 ? { heldout: i } : {}));
    render(<MetricChart title="Held-out rows" points={points} metrics={[{ name: "heldout", label: "held-out", color: "#222" }]} />);
    expect(marksPoints(instances().at(-1)!, 1)).toBe(true);
  });
});
