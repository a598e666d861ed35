import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { JobKindInfo, MetricPoint } from "../client/types";
import { BarChart, latestValues } from "./BarChart";
import { TrainingCharts } from "./LossChart";

const point = (step: number, metrics: Record<string, number>): MetricPoint =>
  ({ step, metrics, created_at: "2026-01-01T00:00:00Z" }) as MetricPoint;

function bars() {
  return screen.getAllByTestId("bar").map((g) => ({
    label: g.getAttribute("data-label"),
    height: Number(g.querySelector("rect")?.getAttribute("height")),
  }));
}

describe("BarChart", () => {
  it("draws one bar per label, as tall as its share of the largest", () => {
    render(
      <BarChart
        title="Feature density"
        bars={[
          { label: "never", value: 2 },
          { label: "-1", value: 8 },
          { label: "-0.5", value: 0 },
        ]}
      />,
    );
    const [never, one, half] = bars();
    expect([never?.label, one?.label, half?.label]).toEqual(["never", "-1", "-0.5"]);
    expect(one?.height).toBeGreaterThan(0);
    expect(never?.height).toBeCloseTo((one?.height ?? 0) / 4);
    expect(half?.height).toBe(0);
    expect(screen.getByRole("img", { name: "Feature density" })).toBeInTheDocument();
  });

  it("says so while nothing is reported", () => {
    render(<BarChart title="Feature density" bars={[{ label: "never", value: null }]} />);
    expect(screen.queryAllByTestId("bar")).toHaveLength(0);
    expect(screen.getByText("no data yet")).toBeInTheDocument();
  });

  it("takes each metric's newest value", () => {
    expect(latestValues([point(1, { a: 1, b: 2 }), point(2, { a: 3 })])).toEqual({ a: 3, b: 2 });
  });
});

describe("a kind's bar chart among its charts", () => {
  it("is drawn from the latest values, without the line charts' controls", () => {
    const charts: JobKindInfo["charts"] = [
      {
        title: "Feature density (latents per log10 firing frequency)",
        style: "bars",
        log_y: false,
        series: [
          { metric: "density_never", label: "never" },
          { metric: "density_bin_12", label: "-0.5" },
        ],
      },
    ];
    render(<TrainingCharts points={[point(500, { density_never: 3, density_bin_12: 29 })]} charts={charts} />);
    expect(screen.getByTestId("feature-chart")).toBeInTheDocument();
    expect(bars().map((b) => b.label)).toEqual(["never", "-0.5"]);
    expect(screen.queryByLabelText("smoothing")).toBeNull();
  });
});
