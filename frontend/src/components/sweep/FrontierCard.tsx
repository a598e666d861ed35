import { useMemo, useState } from "react";
import { useNavigate } from "react-router-dom";
import type { Sweep } from "../../client/sweepTypes";
import { paramsText } from "../../lib/sweep/members";
import { betterOf, paretoFrontier, type Better } from "../../lib/sweep/pareto";
import { tickText } from "../../lib/sweep/scale";
import { ParetoScatter, type ScatterPoint } from "./ParetoScatter";

export interface MetricOption {
  name: string;
  label: string;
}

interface Props {
  sweep: Sweep;
  metrics: MetricOption[];
}

/** An SAE sweep opens on L0 (fewer is better) against explained variance (more is better). */
export function defaultAxes(metrics: MetricOption[]): [string, string] {
  const names = metrics.map((m) => m.name);
  if (names.includes("l0") && names.includes("explained_variance")) return ["l0", "explained_variance"];
  return [names[0] ?? "", names[1] ?? names[0] ?? ""];
}

function AxisPicker(props: {
  axis: "x" | "y";
  metric: string;
  better: Better;
  metrics: MetricOption[];
  onMetric: (m: string) => void;
  onBetter: (b: Better) => void;
}) {
  const { axis, metric, better, metrics } = props;
  return (
    <label className="axis-picker small">
      {axis}
      <select aria-label={`${axis} metric`} value={metric} onChange={(e) => props.onMetric(e.target.value)}>
        {metrics.map((m) => (
          <option key={m.name} value={m.name}>
            {m.label}
          </option>
        ))}
      </select>
      <select aria-label={`${axis} better`} value={better} onChange={(e) => props.onBetter(e.target.value as Better)}>
        <option value="min">fewer is better</option>
        <option value="max">more is better</option>
      </select>
    </label>
  );
}

/**
 * Any two summary metrics of the members that succeeded, the Pareto frontier drawn and its
 * members listed (linked, in frontier order); the members appear as they finish.
 */
export function FrontierCard({ sweep, metrics }: Props) {
  const navigate = useNavigate();
  const [initialX, initialY] = defaultAxes(metrics);
  const [xMetric, setXMetric] = useState(initialX);
  const [yMetric, setYMetric] = useState(initialY);
  const [xBetter, setXBetter] = useState<Better>(betterOf(initialX));
  const [yBetter, setYBetter] = useState<Better>(betterOf(initialY));
  const points = useMemo<ScatterPoint[]>(
    () =>
      sweep.members
        .filter((m) => m.status === "succeeded" && m.metrics[xMetric] !== undefined && m.metrics[yMetric] !== undefined)
        .map((m) => ({
          jobId: m.job_id,
          x: m.metrics[xMetric] as number,
          y: m.metrics[yMetric] as number,
          label: `#${m.index} ${paramsText(m.params)}`,
        })),
    [sweep.members, xMetric, yMetric],
  );
  const frontier = useMemo(() => paretoFrontier(points, xBetter, yBetter), [points, xBetter, yBetter]);
  const labelOf = (name: string) => metrics.find((m) => m.name === name)?.label ?? name;
  const xLabel = `${labelOf(xMetric)} (${xBetter === "min" ? "fewer" : "more"} is better)`;
  const yLabel = `${labelOf(yMetric)} (${yBetter === "min" ? "fewer" : "more"} is better)`;
  return (
    <div className="card" data-testid="frontier-card">
      <div className="section-head">
        <h2>Pareto frontier</h2>
        <div className="page-tools">
          <AxisPicker
            axis="x"
            metric={xMetric}
            better={xBetter}
            metrics={metrics}
            onMetric={(m) => {
              setXMetric(m);
              setXBetter(betterOf(m));
            }}
            onBetter={setXBetter}
          />
          <AxisPicker
            axis="y"
            metric={yMetric}
            better={yBetter}
            metrics={metrics}
            onMetric={(m) => {
              setYMetric(m);
              setYBetter(betterOf(m));
            }}
            onBetter={setYBetter}
          />
        </div>
      </div>
      <p className="muted small">
        {points.length} of {sweep.members.length} members succeeded with both figures; {frontier.length} on the frontier (no other member is
        as good in both and better in one). Click a point to open its job.
      </p>
      <ParetoScatter
        points={points}
        frontier={frontier}
        xLabel={xLabel}
        yLabel={yLabel}
        onOpen={(id) => navigate(`/jobs/${id}`)}
        describe={(p) => `${labelOf(xMetric)} ${tickText(p.x)}, ${labelOf(yMetric)} ${tickText(p.y)}`}
      />
    </div>
  );
}
