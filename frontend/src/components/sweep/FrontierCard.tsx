import { useMemo, useState } from "react";
import { useNavigate } from "react-router-dom";
import type { Sweep, SweepMember } from "../../client/sweepTypes";
import { defaultAxes, reportedMetrics, varyingMetrics } from "../../lib/sweep/axes";
import { isStopped, memberText } from "../../lib/sweep/members";
import { betterOf, kneeOf, paretoFrontier, type Better } from "../../lib/sweep/pareto";
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
 * figures when they stopped, and members still running as squares at their newest figures; both
 * are kept off the frontier: those are not the figures of a full run. It opens on the held-out
 * figures where the members report them, and rings the frontier's knee, saying why.
 */
export function FrontierCard({ sweep, metrics }: Props) {
  const navigate = useNavigate();
  const varying = useMemo(() => varyingMetrics(sweep.members, metrics), [sweep.members, metrics]);
  // the default axes follow the members as they finish, until the user picks
  const reported = useMemo(() => reportedMetrics(sweep.members), [sweep.members]);
  const [autoX, autoY] = defaultAxes(metrics, varying, reported);
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
    const point = (m: SweepMember, stopped: boolean, running = false): ScatterPoint => ({
      jobId: m.job_id,
      x: m.metrics[xMetric] as number,
      y: m.metrics[yMetric] as number,
      label: stopped ? `${memberText(m)} (${m.status})` : running ? `${memberText(m)} (running, step ${m.progress.step})` : memberText(m),
      stopped,
      running,
    });
    return [
      ...sweep.members.filter((m) => m.status === "succeeded" && placed(m)).map((m) => point(m, false)),
      ...sweep.members.filter((m) => isStopped(m) && placed(m)).map((m) => point(m, true)),
      ...sweep.members.filter((m) => m.status === "running" && placed(m)).map((m) => point(m, false, true)),
    ];
  }, [sweep.members, xMetric, yMetric]);
  const finished = useMemo(() => points.filter((p) => !p.stopped && !p.running), [points]);
  // indices into `finished`, the first points: the same indices into `points`
  const frontier = useMemo(() => paretoFrontier(finished, xBetter, yBetter), [finished, xBetter, yBetter]);
  const running = points.filter((p) => p.running).length;
  const stopped = points.length - finished.length - running;
  const knee = useMemo(() => kneeOf(finished, frontier), [finished, frontier]);
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
        {stopped > 0 && `, ${stopped} stopped before their last step (hollow: their figures at the stop, off the frontier)`}
        {running > 0 && `, ${running} running (squares: their newest figures, off the frontier until they succeed)`}; {frontier.length} on
        the frontier (no other member that succeeded is as good in both and better in one). Click a point to open its job.
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
        marked={
          knee === null
            ? null
            : {
                index: knee,
                label: `knee: ${(points[knee] as ScatterPoint).label} → job #${(points[knee] as ScatterPoint).jobId}, the frontier's bend (the member farthest from the line through its two ends): up to it, each step along the frontier buys much ${labelOf(yMetric)} for little ${labelOf(xMetric)}; past it, little. The member to try first.`,
              }
        }
      />
    </div>
  );
}
