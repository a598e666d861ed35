import { useMemo, useState } from "react";
import { useNavigate } from "react-router-dom";
import type { Sweep } from "../../client/sweepTypes";
import { defaultAxes, varyingMetrics } from "../../lib/sweep/axes";
import { memberText } from "../../lib/sweep/members";
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
  const varying = useMemo(() => varyingMetrics(sweep.members, metrics), [sweep.members, metrics]);
  // the default axes follow the members as they finish, until the user picks
  const [autoX, autoY] = defaultAxes(metrics, varying);
  const [xChoice, setXChoice] = useState<string | null>(null);
  const [yChoice, setYChoice] = useState<string | null>(null);
  const xMetric = xChoice ?? autoX;
  const yMetric = yChoice ?? autoY;
  const [xBetterChoice, setXBetter] = useState<Better | null>(null);
  const [yBetterChoice, setYBetter] = useState<Better | null>(null);
  const xBetter = xBetterChoice ?? betterOf(xMetric);
  const yBetter = yBetterChoice ?? betterOf(yMetric);
  const points = useMemo<ScatterPoint[]>(
    () =>
      sweep.members
        .filter((m) => m.status === "succeeded" && m.metrics[xMetric] !== undefined && m.metrics[yMetric] !== undefined)
        .map((m) => ({
          jobId: m.job_id,
          x: m.metrics[xMetric] as number,
          y: m.metrics[yMetric] as number,
          label: memberText(m),
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
              setXChoice(m);
              setXBetter(null);
            }}
            onBetter={setXBetter}
          />
          <AxisPicker
            axis="y"
            metric={yMetric}
            better={yBetter}
            metrics={metrics}
            onMetric={(m) => {
              setYChoice(m);
              setYBetter(null);
            }}
            onBetter={setYBetter}
          />
        </div>
      </div>
      <p className="muted small">
        {points.length} of {sweep.members.length} members succeeded with both figures; {frontier.length} on the frontier (no other member is
        as good in both and better in one). Click a point to open its job.
      </p>
      {[xMetric, yMetric]
        .filter((name, i, both) => points.length > 1 && !varying.has(name) && both.indexOf(name) === i)
        .map((name) => (
          <p key={name} className="small banner warn" data-testid="constant-axis">
            {labelOf(name)} is the same for every member ({tickText((points[0] as ScatterPoint)[name === xMetric ? "x" : "y"])}): pick
            another axis.
          </p>
        ))}
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
