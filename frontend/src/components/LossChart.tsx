import { useMemo } from "react";
import type uPlot from "uplot";
import type { MetricPoint, MetricValues } from "../client/types";
import { TimeSeriesChart, type SeriesSpec } from "./TimeSeriesChart";

type MetricName = keyof MetricValues;

/** step on x, the named metrics on y; one uPlot instance fed as points arrive. */
export function MetricChart({
  points,
  metrics,
  title,
  testId,
  logY = false,
}: {
  points: MetricPoint[];
  metrics: readonly { name: MetricName; label: string; color: string }[];
  title: string;
  testId?: string;
  logY?: boolean;
}) {
  const data = useMemo(() => {
    const steps = points.map((p) => p.step);
    const columns = metrics.map((m) =>
      points.map((p) => {
        const v = p.metrics[m.name];
        return typeof v === "number" && (!logY || v > 0) ? v : null;
      }),
    );
    return [steps, ...columns] as unknown as uPlot.AlignedData;
  }, [points, metrics, logY]);
  const specs: SeriesSpec[] = useMemo(() => metrics.map((m) => ({ label: m.label, color: m.color })), [metrics]);
  return <TimeSeriesChart title={title} data={data} series={specs} revision={points.length} xTime={false} height={180} logY={logY} testId={testId} />;
}

const LOSS = [
  { name: "overall_loss", label: "overall", color: "#4f7cff" },
  { name: "mse_loss", label: "MSE", color: "#1fb57a" },
  { name: "l1_loss", label: "L1", color: "#f2a93b" },
] as const satisfies { name: MetricName; label: string; color: string }[];
const L0 = [{ name: "l0", label: "L0", color: "#9b6bff" }] as const satisfies { name: MetricName; label: string; color: string }[];
const EV = [{ name: "explained_variance", label: "explained variance", color: "#38b6c9" }] as const satisfies { name: MetricName; label: string; color: string }[];
const THROUGHPUT = [{ name: "activations_per_s", label: "activations/s", color: "#e0567a" }] as const satisfies {
  name: MetricName;
  label: string;
  color: string;
}[];

export function LossChart({ points }: { points: MetricPoint[] }) {
  return <MetricChart title="Loss" points={points} metrics={LOSS} testId="loss-chart" logY />;
}

export function TrainingCharts({ points }: { points: MetricPoint[] }) {
  return (
    <div className="chart-grid">
      <LossChart points={points} />
      <MetricChart title="L0 (active features per sample)" points={points} metrics={L0} testId="l0-chart" />
      <MetricChart title="Explained variance" points={points} metrics={EV} testId="ev-chart" />
      <MetricChart title="Throughput" points={points} metrics={THROUGHPUT} testId="throughput-chart" />
    </div>
  );
}
