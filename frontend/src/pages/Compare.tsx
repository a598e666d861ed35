import { useQueries, useQuery } from "@tanstack/react-query";
import { useMemo, useState } from "react";
import { Link, useSearchParams } from "react-router-dom";
import { api, isForbidden, unwrap } from "../client/api";
import { isTerminal, type Job, type JobKindInfo, type MetricPoint } from "../client/types";
import "../components/compare/compare.css";
import { SettingScatter } from "../components/compare/SettingScatter";
import { JobLabels } from "../components/job/JobLabels";
import { PageHeader } from "../components/PageHeader";
import { StatusBadge } from "../components/StatusBadge";
import { TimeSeriesChart, type SeriesSpec } from "../components/TimeSeriesChart";
import { keys, ownerOnly, useKinds } from "../hooks/queries";
import { alignRuns, configRows, figureRows, MAX_COMPARED, metricOptions, numericSettings, parseJobIds, type XAxis } from "../lib/compare";
import { formatMetric } from "../lib/format";

const PALETTE = ["#4f7cff", "#e0474c", "#1fb57a", "#e59a1c", "#9b6bff", "#14b8c4", "#d9468f", "#7a8b2e", "#8a5a44", "#4b5563"];
const colorOf = (i: number): string => PALETTE[i % PALETTE.length] as string;

/** The compared jobs, in the URL's order (GET /api/jobs?id=...), followed while any runs. */
function useComparedJobs(ids: number[]) {
  return useQuery({
    queryKey: ["jobs", "compare", ids],
    queryFn: () => unwrap(api.GET("/api/jobs", { params: { query: { id: ids, limit: MAX_COMPARED } } })),
    enabled: ids.length > 0,
    refetchInterval: (query) => (query.state.data?.items.every((j) => isTerminal(j.status)) ? false : 3000),
  });
}

function JobHead({ job, index }: { job: Job; index: number }) {
  return (
    <th scope="col">
      <span className="compare-legend" style={{ background: colorOf(index) }} aria-hidden />
      <Link to={`/jobs/${job.id}`}>
        #{job.id} {job.name}
      </Link>
    </th>
  );
}

function Curves({ jobs, kinds }: { jobs: Job[]; kinds: JobKindInfo[] }) {
  const results = useQueries({
    queries: jobs.map((j) => ({
      queryKey: [...keys.metrics(j.id), "all"],
      queryFn: async () => (await unwrap(api.GET("/api/jobs/{job_id}/metrics", { params: { path: { job_id: j.id } } }))).items,
      refetchInterval: isTerminal(j.status) ? (false as const) : 3000,
      ...ownerOnly,
    })),
  });
  const runs: MetricPoint[][] = results.map((r) => r.data ?? []);
  const revision = results.reduce((n, r) => n + r.dataUpdatedAt, 0);
  const options = useMemo(() => metricOptions(kinds, runs), [kinds, revision]); // eslint-disable-line react-hooks/exhaustive-deps
  const [chosen, setChosen] = useState("");
  const [x, setX] = useState<XAxis>("step");
  const metric = options.some((o) => o.name === chosen) ? chosen : (options[0]?.name ?? "");
  const data = useMemo(() => alignRuns(runs, metric, x), [revision, metric, x]); // eslint-disable-line react-hooks/exhaustive-deps
  const idsKey = jobs.map((j) => j.id).join(",");
  const series = useMemo<SeriesSpec[]>(() => jobs.map((j, i) => ({ label: `#${j.id} ${j.name}`, color: colorOf(i) })), [idsKey]); // eslint-disable-line react-hooks/exhaustive-deps
  const forbidden = jobs.filter((_, i) => isForbidden(results[i]?.error));
  const points = data[0].length;
  return (
    <div className="card" data-testid="compare-curves">
      <div className="section-head">
        <h2>Curves</h2>
        <label className="axis-picker small">
          metric{" "}
          <select aria-label="curve metric" value={metric} onChange={(e) => setChosen(e.target.value)}>
            {options.map((o) => (
              <option key={o.name} value={o.name}>
                {o.label === o.name ? o.name : `${o.label} (${o.name})`}
              </option>
            ))}
          </select>
        </label>
        <label className="axis-picker small">
          x{" "}
          <select aria-label="curve x axis" value={x} onChange={(e) => setX(e.target.value as XAxis)}>
            <option value="step">step</option>
            <option value="time">seconds since its first report</option>
          </select>
        </label>
      </div>
      {forbidden.length > 0 && (
        <p className="muted small">Curves are their owner&apos;s to read: not drawn for {forbidden.map((j) => `#${j.id}`).join(", ")}.</p>
      )}
      {points === 0 ? (
        <p className="muted small" data-testid="compare-no-points">
          {metric ? `No points of ${metric} yet.` : "None of these jobs has reported a metric yet."}
        </p>
      ) : (
        <TimeSeriesChart
          key={`${idsKey}/${x}`}
          data={data}
          series={series}
          revision={revision}
          xTime={false}
          height={280}
          testId="compare-chart"
          points={points}
        />
      )}
    </div>
  );
}

function Figures({ jobs, kinds }: { jobs: Job[]; kinds: JobKindInfo[] }) {
  const rows = figureRows(jobs, kinds);
  if (rows.length === 0) return null;
  return (
    <div className="card table-card">
      <div className="section-head">
        <h2>Summary figures</h2>
        <span className="muted small">each job&apos;s newest value; in bold the best, where lower or higher is plainly better</span>
      </div>
      <table className="compare-table" data-testid="compare-figures">
        <thead>
          <tr>
            <th scope="col">newest value</th>
            {jobs.map((j, i) => (
              <JobHead key={j.id} job={j} index={i} />
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.metric}>
              <th scope="row" title={r.metric}>
                {r.label}
              </th>
              {r.values.map((v, i) => (
                <td
                  key={jobs[i]?.id ?? i}
                  className={r.best === i ? "best" : undefined}
                  title={r.best === i ? "the best of these" : undefined}
                >
                  {formatMetric(r.metric, v)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Configs({ jobs }: { jobs: Job[] }) {
  const rows = useMemo(() => configRows(jobs.map((j) => j.config)), [jobs]);
  const differing = rows.filter((r) => r.differs).length;
  const [onlyDiffering, setOnlyDiffering] = useState(false);
  const shown = onlyDiffering ? rows.filter((r) => r.differs) : rows;
  return (
    <div className="card table-card">
      <div className="section-head">
        <h2>Settings</h2>
        <span className="muted small" data-testid="compare-differing-count">
          {differing} of {rows.length} fields differ (marked)
        </span>
        <label className="small">
          <input type="checkbox" checked={onlyDiffering} onChange={(e) => setOnlyDiffering(e.target.checked)} /> only the differing ones
        </label>
      </div>
      <table className="compare-table" data-testid="compare-configs">
        <thead>
          <tr>
            <th scope="col">field</th>
            {jobs.map((j, i) => (
              <JobHead key={j.id} job={j} index={i} />
            ))}
          </tr>
        </thead>
        <tbody>
          {shown.map((r) => (
            <tr key={r.path} data-differs={r.differs || undefined}>
              <th scope="row" className={r.differs ? "differs mono" : "mono"}>
                {r.differs && <span aria-label="differs">≠ </span>}
                {r.path}
              </th>
              {r.values.map((v, i) => (
                <td key={jobs[i]?.id ?? i} className={r.differs ? "differs mono" : "mono"}>
                  {v ?? <span className="missing">not set</span>}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Jobs side by side (/compare?jobs=3,7,12, from the jobs list's ticks): who they are, their
 * summary figures, one metric's curves overlaid, and their settings with the differences marked. */
export function Compare() {
  const [params] = useSearchParams();
  const ids = useMemo(() => parseJobIds(params.get("jobs")), [params]);
  const page = useComparedJobs(ids);
  const kinds = useKinds();
  const byId = new Map((page.data?.items ?? []).map((j) => [j.id, j]));
  const jobs = ids.flatMap((id) => byId.get(id) ?? []);
  const missing = page.data ? ids.filter((id) => !byId.has(id)) : [];
  const jobKinds = (kinds.data ?? []).filter((k) => jobs.some((j) => j.kind === k.name));
  return (
    <div className="page compare-page" data-testid="compare-page">
      <PageHeader title={<>Jobs / compare {jobs.length > 0 && `${jobs.length} jobs`}</>} />
      {ids.length < 2 && (
        <div className="banner">
          Name two or more jobs to compare: tick them in the <Link to="/jobs">jobs list</Link>.
        </div>
      )}
      {page.error && <div className="banner error">{page.error.message}</div>}
      {missing.length > 0 && <div className="banner error">No job {missing.map((id) => `#${id}`).join(", ")}.</div>}
      {jobs.length > 0 && (
        <>
          <div className="card table-card">
            <table className="compare-table" data-testid="compare-jobs">
              <thead>
                <tr>
                  <th scope="col">job</th>
                  {jobs.map((j, i) => (
                    <JobHead key={j.id} job={j} index={i} />
                  ))}
                </tr>
              </thead>
              <tbody>
                <tr>
                  <th scope="row">kind</th>
                  {jobs.map((j) => (
                    <td key={j.id}>{j.kind}</td>
                  ))}
                </tr>
                <tr>
                  <th scope="row">status</th>
                  {jobs.map((j) => (
                    <td key={j.id}>
                      <StatusBadge status={j.status} devices={j.devices} />
                    </td>
                  ))}
                </tr>
                <tr>
                  <th scope="row">sweep</th>
                  {jobs.map((j) => (
                    <td key={j.id}>
                      {j.sweep_id ? <Link to={`/sweeps/${j.sweep_id}`}>sweep {j.sweep_id}</Link> : <span className="missing">none</span>}
                    </td>
                  ))}
                </tr>
                <tr>
                  <th scope="row">tags, notes</th>
                  {jobs.map((j) => (
                    <td key={j.id}>
                      <JobLabels job={j} />
                    </td>
                  ))}
                </tr>
              </tbody>
            </table>
          </div>
          <Figures jobs={jobs} kinds={jobKinds} />
          <SettingScatter
            jobs={jobs}
            settings={numericSettings(configRows(jobs.map((j) => j.config)))}
            figures={figureRows(jobs, jobKinds)}
            colorOf={colorOf}
          />
          <Curves jobs={jobs} kinds={jobKinds} />
          <Configs jobs={jobs} />
        </>
      )}
    </div>
  );
}
