import { useMemo, useState } from "react";
import type uPlot from "uplot";
import type { JobKindInfo, MetricPoint } from "../client/types";
import { lastSteps, smoothPoints } from "../lib/smooth";
import { BarChart, latestValues } from "./BarChart";
import { TimeSeriesChart, type SeriesSpec } from "./TimeSeriesChart";

type ChartSpec = JobKindInfo["charts"][number];
// Series colours, in order; a kind names its metrics, the dashboard picks the colours.
const PALETTE = ["#4f7cff", "#1fb57a", "#f2a93b", "#9b6bff", "#38b6c9", "#e0567a"];

/** step on x, the named metrics on y; one uPlot instance fed as points arrive. */
export function MetricChart({
  points,
  metrics,
  title,
  testId,
  logY = false,
}: {
  points: MetricPoint[];
  metrics: readonly { name: string; label: string; color: string }[];
  title: string;
  testId?: string;
  logY?: boolean;
}) {
  const data = useMemo(() => {
    const steps = points.map((p) => p.step);
    const columns = metrics.map((m) =>
      points.map((p) => {
        const v = (p.metrics as Record<string, unknown>)[m.name];
        return typeof v === "number" && (!logY || v > 0) ? v : null;
      }),
    );
    return [steps, ...columns] as unknown as uPlot.AlignedData;
  }, [points, metrics, logY]);
  const specs: SeriesSpec[] = useMemo(() => metrics.map((m) => ({ label: m.label, color: m.color })), [metrics]);
  return (
    <TimeSeriesChart
      title={title}
      data={data}
      series={specs}
      revision={points.length}
      xTime={false}
      height={180}
      logY={logY}
      testId={testId}
    />
  );
}

function chartMetrics(chart: ChartSpec) {
  return chart.series.map((s, i) => ({ name: s.metric, label: s.label, color: PALETTE[i % PALETTE.length] as string }));
}

/** Slug of a chart title, for tests and anchors: "Loss" -> "loss-chart". */
export function chartTestId(title: string): string {
  return `${title.toLowerCase().split(/[^a-z0-9]+/)[0]}-chart`;
}

const RANGES = [0, 100, 1000, 10000];

/** Smoothing (TensorBoard's) and the range of steps shown, for every chart of the job. */
function ChartControls({
  smoothing,
  onSmoothing,
  range,
  onRange,
}: {
  smoothing: number;
  onSmoothing: (v: number) => void;
  range: number;
  onRange: (v: number) => void;
}) {
  return (
    <div className="chart-controls small">
      <label>
        smoothing{" "}
        <input
          type="range"
          min={0}
          max={0.99}
          step={0.01}
          value={smoothing}
          onChange={(e) => onSmoothing(Number(e.target.value))}
          aria-label="smoothing"
        />{" "}
        <span className="mono">{smoothing.toFixed(2)}</span>
      </label>
      <label>
        steps{" "}
        <select aria-label="step range" value={range} onChange={(e) => onRange(Number(e.target.value))}>
          {RANGES.map((r) => (
            <option key={r} value={r}>
              {r === 0 ? "all" : `last ${r}`}
            </option>
          ))}
        </select>
      </label>
      <span className="muted">drag across a chart to zoom; double-click to reset</span>
    </div>
  );
}

/** A chart of style "bars": each series' latest value, unsmoothed, one bar each. */
function LatestBars({ chart, latest }: { chart: ChartSpec; latest: Record<string, number> }) {
  const bars = chart.series.map((s) => ({ label: s.label, value: latest[s.metric] ?? null }));
  return <BarChart title={chart.title} bars={bars} xLabel={chart.x_label} testId={chartTestId(chart.title)} />;
}

/** The job kind's charts (GET /api/kinds/{kind}), each fed with the job's metric points. */
export function TrainingCharts({ points: raw, charts }: { points: MetricPoint[]; charts: readonly ChartSpec[] }) {
  const lines = useMemo(() => charts.filter((c) => c.style !== "bars").map((chart) => ({ chart, metrics: chartMetrics(chart) })), [charts]);
  const bars = charts.filter((c) => c.style === "bars");
  const latest = useMemo(() => latestValues(raw), [raw]);
  const [smoothing, setSmoothing] = useState(0);
  const [range, setRange] = useState(0);
  const points = useMemo(() => smoothPoints(lastSteps(raw, range), smoothing), [raw, range, smoothing]);
  return (
    <>
      {lines.length > 0 && <ChartControls smoothing={smoothing} onSmoothing={setSmoothing} range={range} onRange={setRange} />}
      <div className="chart-grid">
        {bars.map((chart) => (
          <LatestBars key={chart.title} chart={chart} latest={latest} />
        ))}
        {lines.map(({ chart, metrics }) => (
          <MetricChart
            key={chart.title}
            title={chart.title}
            points={points}
            metrics={metrics}
            testId={chartTestId(chart.title)}
            logY={chart.log_y}
          />
        ))}
      </div>
    </>
  );
}
