import { useQueries } from "@tanstack/react-query";
import { useMemo, useState } from "react";
import type uPlot from "uplot";
import { api, unwrap } from "../../client/api";
import type { Sweep } from "../../client/sweepTypes";
import { isTerminal, type JobStatus, type MetricPoint } from "../../client/types";
import { keys, ownerOnly } from "../../hooks/queries";
import { memberText } from "../../lib/sweep/members";
import { TimeSeriesChart, type SeriesSpec } from "../TimeSeriesChart";
import type { MetricOption } from "./FrontierCard";

const PALETTE = ["#4f7cff", "#e0474c", "#1fb57a", "#e59a1c", "#9b6bff", "#14b8c4", "#d9468f", "#7a8b2e", "#8a5a44", "#4b5563"];

/** Each member's points of `metric` on one x (the union of their steps); gaps where one has none. */
export function alignCurves(runs: { points: MetricPoint[] }[], metric: string): uPlot.AlignedData {
  const steps = [...new Set(runs.flatMap((r) => r.points.filter((p) => p.metrics[metric] !== undefined).map((p) => p.step)))].sort(
    (a, b) => a - b,
  );
  const at = new Map(steps.map((s, i) => [s, i]));
  const series = runs.map((r) => {
    const ys: (number | null)[] = steps.map(() => null);
    for (const p of r.points) {
      const v = p.metrics[metric];
      const i = at.get(p.step);
      if (v !== undefined && i !== undefined) ys[i] = v;
    }
    return ys;
  });
  return [steps, ...series] as uPlot.AlignedData;
}

/** One chosen metric's curve for each ticked member (at first the page's default ones), overlaid (GET /api/jobs/{id}/metrics each). */
export function MemberCurves({ sweep, ticked, metrics }: { sweep: Sweep; ticked: ReadonlySet<number>; metrics: MetricOption[] }) {
  const [metric, setMetric] = useState(metrics[0]?.name ?? "");
  const members = sweep.members.filter((m) => ticked.has(m.job_id));
  const results = useQueries({
    queries: members.map((m) => ({
      // "ended" in the key: a member that ends between two refetches is fetched once more, with
      // its last points (a 60-step member ended within one 3 s interval and kept the empty
      // curve of its first fetch), and then no more.
      queryKey: [...keys.metrics(m.job_id), "all", isTerminal(m.status as JobStatus) ? "ended" : "live"],
      queryFn: async () => (await unwrap(api.GET("/api/jobs/{job_id}/metrics", { params: { path: { job_id: m.job_id } } }))).items,
      refetchInterval: isTerminal(m.status as JobStatus) ? (false as const) : 3000,
      ...ownerOnly,
    })),
  });
  const runs = members.map((m, i) => ({ member: m, points: results[i]?.data ?? [] }));
  const revision = results.reduce((n, r) => n + r.dataUpdatedAt, 0);
  const data = useMemo(() => alignCurves(runs, metric), [revision, metric, ticked]); // eslint-disable-line react-hooks/exhaustive-deps
  const idsKey = members.map((m) => m.job_id).join(",");
  const series = useMemo<SeriesSpec[]>(
    () => runs.map((r, i) => ({ label: memberText(r.member), color: PALETTE[i % PALETTE.length] as string })),
    [idsKey], // eslint-disable-line react-hooks/exhaustive-deps
  );
  return (
    <div className="card" data-testid="member-curves">
      <div className="section-head">
        <h2>Curves</h2>
        <label className="axis-picker small">
          metric
          <select aria-label="curve metric" value={metric} onChange={(e) => setMetric(e.target.value)}>
            {metrics.map((m) => (
              <option key={m.name} value={m.name}>
                {m.label}
              </option>
            ))}
          </select>
        </label>
      </div>
      {members.length === 0 ? (
        <p className="muted small">Tick members in the table to draw their curves here.</p>
      ) : (
        <TimeSeriesChart key={idsKey} data={data} series={series} revision={revision} xTime={false} height={260} testId="curves-chart" />
      )}
    </div>
  );
}
