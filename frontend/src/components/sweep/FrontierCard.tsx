import { useMemo, useState } from "react";
import { useNavigate } from "react-router-dom";
import type { Sweep, SweepMember } from "../../client/sweepTypes";
import { defaultAxes, varyingMetrics } from "../../lib/sweep/axes";
import { isStopped, memberText } from "../../lib/sweep/members";
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
 * members listed (linked, in frontier order); the members appear as they finish. Members stopped
 * before their last step (early stopping, a cancel, the time limit) are drawn hollow at their
 * figures when they stopped, and kept off the frontier: those are not the figures of a full run.
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
  // the members that succeeded first (the frontier is theirs), then those stopped early
  const points = useMemo<ScatterPoint[]>(() => {
    const placed = (m: SweepMember) => m.metrics[xMetric] !== undefined && m.metrics[yMetric] !== undefined;
    const point = (m: SweepMember, stopped: boolean): ScatterPoint => ({
      jobId: m.job_id,
      x: m.metrics[xMetric] as number,
      y: m.metrics[yMetric] as number,
      label: stopped ? `${memberText(m)} (${m.status})` : memberText(m),
      stopped,
    });
    return [
      ...sweep.members.filter((m) => m.status === "succeeded" && placed(m)).map((m) => point(m, false)),
      ...sweep.members.filter((m) => isStopped(m) && placed(m)).map((m) => point(m, true)),
    ];
  }, [sweep.members, xMetric, yMetric]);
  const finished = useMemo(() => points.filter((p) => !p.stopped), [points]);
  // indices into `finished`, the first points: the same indices into `points`
  const frontier = useMemo(() => paretoFrontier(finished, xBetter, yBetter), [finished, xBetter, yBetter]);
  const stopped = points.length - finished.length;
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
        {finished.length} of {sweep.members.length} members succeeded with both figures
        {stopped > 0 && `, ${stopped} stopped before their last step (hollow: their figures at the stop, off the frontier)`};{" "}
        {frontier.length} on the frontier (no other member that succeeded is as good in both and better in one). Click a point to open its
        job.
      </p>
      {[xMetric, yMetric]
        .filter((name, i, both) => finished.length > 1 && !varying.has(name) && both.indexOf(name) === i)
        .map((name) => (
          <p key={name} className="small banner warn" data-testid="constant-axis">
            {labelOf(name)} is the same for every member ({tickText((finished[0] as ScatterPoint)[name === xMetric ? "x" : "y"])}): pick
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
