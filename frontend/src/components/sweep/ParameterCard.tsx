import { useMemo, useState } from "react";
import { Link, useNavigate } from "react-router-dom";
import type { components } from "../../client/schema";
import type { Sweep, SweepMember } from "../../client/sweepTypes";
import { useSweepAnalysis } from "../../hooks/useSweeps";
import { defaultMetric, reportedMetrics } from "../../lib/sweep/axes";
import { memberText } from "../../lib/sweep/members";
import { betterOf, type Better } from "../../lib/sweep/pareto";
import { spansDecades, tickText } from "../../lib/sweep/scale";
import type { MetricOption } from "./FrontierCard";
import { ParallelCoordinates } from "./ParallelCoordinates";
import { ParetoScatter, type ScatterPoint } from "./ParetoScatter";

type Analysis = components["schemas"]["SweepAnalysis"];
type Effect = components["schemas"]["ParameterEffect"];

interface Props {
  sweep: Sweep;
  metrics: MetricOption[];
  /** the swept parameters, in the spec's order */
  paths: string[];
}

const placed = (m: SweepMember, metric: string, path: string) =>
  (m.status === "succeeded" || m.status === "running") && typeof m.metrics[metric] === "number" && typeof m.params[path] === "number";

/** The members that succeeded, then those running, at (their value of `path`, their `metric`). */
function scatterPoints(members: readonly SweepMember[], metric: string, path: string): ScatterPoint[] {
  const point = (m: SweepMember): ScatterPoint => ({
    jobId: m.job_id,
    x: m.params[path] as number,
    y: m.metrics[metric] as number,
    label: m.status === "running" ? `${memberText(m)} (running)` : memberText(m),
    running: m.status === "running",
  });
  const shown = members.filter((m) => placed(m, metric, path));
  return [...shown.filter((m) => m.status !== "running"), ...shown.filter((m) => m.status === "running")].map(point);
}

/** Each parameter's rank correlation with the metric as a bar, named for what it is. */
function Importance({ analysis, metricLabel }: { analysis: Analysis; metricLabel: string }) {
  const rows = analysis.parameters.filter((p) => p.rank_correlation !== null && p.rank_correlation !== undefined);
  if (rows.length === 0) return null;
  const ordered = [...rows].sort((a, b) => Math.abs(b.rank_correlation ?? 0) - Math.abs(a.rank_correlation ?? 0));
  return (
    <div data-testid="importance">
      <h3 className="small">Rank correlation with {metricLabel} (Spearman)</h3>
      <p className="muted small">
        {analysis.importance}. Positive: more of the parameter, a higher {metricLabel}.
      </p>
      <ul className="importance-bars small">
        {ordered.map((p) => {
          const rho = p.rank_correlation ?? 0;
          return (
            <li key={p.path} data-testid="importance-row" data-path={p.path} data-rho={rho}>
              <span className="mono">{p.path}</span>
              <span className={`bar${rho < 0 ? " negative" : ""}`} style={{ width: `${Math.abs(rho) * 100}%` }} aria-hidden="true" />
              <span className="mono">
                {rho >= 0 ? "+" : ""}
                {rho.toFixed(2)}
              </span>
            </li>
          );
        })}
      </ul>
    </div>
  );
}

/**
 * Any metric against any swept parameter: one point per member that succeeded (squares for those
 * running, at their newest figures), a log axis where the values span decades, the best member
 * ringed and named, and "lr best at the top of the range searched: widen it" where the best is the
 * largest (or least) value tried; then each parameter's rank correlation with the metric and the
 * parallel coordinates of parameters to metric. The figures come from GET /api/sweeps/{id}/analysis.
 */
export function ParameterCard({ sweep, metrics, paths }: Props) {
  const navigate = useNavigate();
  const reported = useMemo(() => reportedMetrics(sweep.members), [sweep.members]);
  const [metricChoice, setMetric] = useState<string | null>(null);
  const [betterChoice, setBetter] = useState<Better | null>(null);
  const [pathChoice, setPath] = useState<string | null>(null);
  const metric = metricChoice ?? defaultMetric(metrics, reported);
  const better = betterChoice ?? betterOf(metric);
  // refetched as the members' figures for the metric change
  const version = sweep.members.map((m) => `${m.status}:${m.metrics[metric] ?? ""}`).join(",");
  const analysis = useSweepAnalysis(sweep.id, metric, better, version);
  const numeric = analysis.data?.parameters.filter((p) => p.numeric) ?? [];
  // opens on the parameter that moves the metric most
  const strongest = numeric.reduce<Effect | undefined>(
    (top, p) => (top === undefined || Math.abs(p.rank_correlation ?? 0) > Math.abs(top.rank_correlation ?? 0) ? p : top),
    undefined,
  );
  const path = pathChoice ?? strongest?.path ?? paths[0] ?? "";
  const effect: Effect | undefined = analysis.data?.parameters.find((p) => p.path === path);
  const points = scatterPoints(sweep.members, metric, path); // memoised by the React compiler
  if (reported.size === 0 || metric === "") return null; // nothing measured yet
  const labelOf = (name: string) => metrics.find((m) => m.name === name)?.label ?? name;
  const xLog = effect?.log_axis ?? spansDecades(points.map((p) => p.x));
  const bestIndex = points.findIndex((p) => p.jobId === analysis.data?.best_job_id);
  const best = bestIndex >= 0 ? (points[bestIndex] as ScatterPoint) : null;
  const notes = (analysis.data?.parameters ?? []).filter((p) => p.note);
  return (
    <div className="card" data-testid="parameter-card">
      <div className="section-head">
        <h2>Metric against setting</h2>
        <div className="page-tools">
          <label className="axis-picker small">
            metric
            <select aria-label="metric" value={metric} onChange={(e) => (setMetric(e.target.value), setBetter(null))}>
              {metrics
                .filter((m) => reported.has(m.name))
                .map((m) => (
                  <option key={m.name} value={m.name}>
                    {m.label}
                  </option>
                ))}
            </select>
            <select aria-label="metric better" value={better} onChange={(e) => setBetter(e.target.value as Better)}>
              <option value="min">fewer is better</option>
              <option value="max">more is better</option>
            </select>
          </label>
          <label className="axis-picker small">
            against
            <select aria-label="parameter" value={path} onChange={(e) => setPath(e.target.value)}>
              {numeric.map((p) => (
                <option key={p.path} value={p.path}>
                  {p.path}
                </option>
              ))}
            </select>
          </label>
        </div>
      </div>
      {analysis.error && <p className="banner error small">{analysis.error.message}</p>}
      {analysis.data && best && (
        <p data-testid="best-member" data-job-id={best.jobId}>
          Best {labelOf(metric)} ({better === "max" ? "highest" : "lowest"}):{" "}
          <Link to={`/jobs/${best.jobId}`}>
            {best.label} → job #{best.jobId}
          </Link>{" "}
          at {tickText(best.y)}
          {analysis.data.running > 0 && <span className="muted"> (none has succeeded yet: the running members' newest figures)</span>}
        </p>
      )}
      {notes.map((p) => (
        <p key={p.path} className="small banner warn" data-testid="edge-callout" data-path={p.path} data-edge={p.edge}>
          {p.note}
        </p>
      ))}
      {points.length > 0 && (
        <ParetoScatter
          points={points}
          frontier={[]}
          xLabel={`${path}${xLog ? " (log)" : ""}`}
          yLabel={`${labelOf(metric)} (${better === "min" ? "fewer" : "more"} is better)`}
          xLog={xLog}
          onOpen={(id) => navigate(`/jobs/${id}`)}
          describe={(p) => `${path} ${tickText(p.x)}, ${labelOf(metric)} ${tickText(p.y)}`}
          marked={best ? { index: bestIndex, label: `best: ${best.label} → job #${best.jobId}` } : null}
          height={300}
        />
      )}
      {analysis.data && <Importance analysis={analysis.data} metricLabel={labelOf(metric)} />}
      <ParallelCoordinates members={sweep.members} paths={paths} metric={{ name: metric, label: labelOf(metric), better }} />
    </div>
  );
}
