import { useMemo, useState } from "react";
import { Link, useSearchParams } from "react-router-dom";
import type { Job, JobKindInfo } from "../client/types";
import "../components/compare/compare.css";
import { JobLabels } from "../components/job/JobLabels";
import { JobFilterBar } from "../components/JobFilterBar";
import { PageHeader } from "../components/PageHeader";
import { ProgressBar } from "../components/ProgressBar";
import { StatusBadge } from "../components/StatusBadge";
import { SweepBadge } from "../components/sweep/SweepBadge";
import { useJobs, useKinds } from "../hooks/queries";
import { compareUrl, leadingFigures, MAX_COMPARED } from "../lib/compare";
import { formatAge, formatDuration, formatMetric } from "../lib/format";
import { allTags, applyFilter, exitReason, filterFromParams, filterToParams, isFiltered } from "../lib/jobFilters";

const PAGE = 25;
// the newest jobs the list searches (the API's page limit); older ones are in `gpudeck jobs`
const WINDOW = 500;

function devicesText(job: Job): string {
  if (job.cluster) return `${job.cluster} (Slurm)`; // Slurm's nodes: on the job's page
  if (job.devices.length === 0) return "—";
  const nodes = new Set(job.devices.map((d) => d.node));
  return job.devices.map((d) => (nodes.size > 1 ? `${d.node}:${d.index}` : `${d.index}`)).join(", ");
}

function Figures({ job, kind }: { job: Job; kind: JobKindInfo | undefined }) {
  const figures = leadingFigures(job, kind);
  if (figures.length === 0) return <span className="muted">—</span>;
  return (
    <>
      {figures.map((f, i) => (
        <span key={f.metric} title={`${f.label}: ${f.value}`}>
          {i > 0 && " · "}
          <span className="muted">{f.label}</span> {formatMetric(f.metric, f.value)}
        </span>
      ))}
    </>
  );
}

interface RowProps {
  job: Job;
  kind: JobKindInfo | undefined;
  ticked: boolean;
  onTick: (id: number, on: boolean) => void;
}

function JobRow({ job, kind, ticked, onTick }: RowProps) {
  return (
    <tr data-testid="job-row" data-job-id={job.id}>
      <td className="tick">
        <input type="checkbox" aria-label={`compare job ${job.id}`} checked={ticked} onChange={(e) => onTick(job.id, e.target.checked)} />
      </td>
      <td className="job-name">
        <Link to={`/jobs/${job.id}`}>
          #{job.id} {job.name ?? job.kind}
        </Link>
        <SweepBadge job={job} />
      </td>
      <td>
        <StatusBadge status={job.status} devices={job.devices} />
      </td>
      <td className="opt">{job.kind}</td>
      <td className="opt figures-cell" data-testid="job-figures">
        <Figures job={job} kind={kind} />
      </td>
      <td className="opt">
        <JobLabels job={job} compact />
      </td>
      <td className="mono opt">{devicesText(job)}</td>
      <td className="wide opt">
        <ProgressBar value={job.progress.step} total={job.progress.total} />
      </td>
      <td title={job.created_at}>{formatAge(job.created_at)}</td>
      <td className="opt">{formatDuration(job.started_at, job.finished_at)}</td>
      <td className="opt" title={job.finished_at ?? undefined}>
        {job.finished_at ? `${formatAge(job.finished_at)} ago` : "—"}
      </td>
      <td className="opt exit-reason" title={exitReason(job)}>
        {exitReason(job)}
      </td>
      <td className="opt">{job.owner}</td>
    </tr>
  );
}

/** Every job, Slurm sacct style: searchable, sortable, filtered by owner and time, the filter in the URL. */
export function Jobs() {
  const [params, setParams] = useSearchParams();
  const filter = filterFromParams(params);
  const [page, setPage] = useState(0);
  const jobs = useJobs(null, WINDOW, 0);
  const all = useMemo(() => jobs.data?.items ?? [], [jobs.data]);
  const owners = useMemo(() => [...new Set(all.map((j) => j.owner))].sort(), [all]);
  const tags = useMemo(() => allTags(all), [all]);
  const kinds = useKinds();
  const kindOf = useMemo(() => new Map((kinds.data ?? []).map((k) => [k.name, k])), [kinds.data]);
  // Ticked jobs, in the order ticked: the comparison's columns (any kind, in sweeps or not).
  const [ticked, setTicked] = useState<number[]>([]);
  const tick = (id: number, on: boolean) => setTicked((now) => (on ? [...now.filter((t) => t !== id), id] : now.filter((t) => t !== id)));
  const shown = applyFilter(all, filter);
  const offset = Math.min(page * PAGE, Math.max(0, shown.length - 1));
  return (
    <div className="page">
      <PageHeader title="Jobs" create={{ to: "/new", label: "New job" }} />
      <JobFilterBar
        filter={filter}
        owners={owners}
        tags={tags}
        onChange={(next) => {
          setParams(filterToParams(next), { replace: true });
          setPage(0);
        }}
      />
      {jobs.error && <div className="banner error">{jobs.error.message}</div>}
      <div className="compare-bar" data-testid="compare-bar">
        {ticked.length < 2 ? (
          <span className="muted small">Tick two or more jobs to compare their settings, curves and figures.</span>
        ) : (
          <>
            <Link className="button primary" to={compareUrl(ticked)} data-testid="compare-link">
              Compare {ticked.length} jobs
            </Link>
            <button type="button" className="link-button small" onClick={() => setTicked([])}>
              clear
            </button>
          </>
        )}
        {ticked.length > MAX_COMPARED && <span className="banner error small">at most {MAX_COMPARED} jobs</span>}
      </div>
      {/* its columns (tick, kind, figures, tags) scroll inside the card on a phone */}
      <div className="card table-card table-scroll">
        <table className="jobs-table" data-testid="jobs-table">
          <thead>
            <tr>
              <th className="tick" aria-label="compare" />
              <th>job</th>
              <th>status</th>
              <th className="opt">kind</th>
              <th className="opt">figures</th>
              <th className="opt">tags</th>
              <th className="opt">GPUs</th>
              <th className="wide opt">progress</th>
              <th>age</th>
              <th className="opt">elapsed</th>
              <th className="opt">ended</th>
              <th className="opt">exit</th>
              <th className="opt">owner</th>
            </tr>
          </thead>
          <tbody>
            {shown.slice(offset, offset + PAGE).map((job) => (
              <JobRow key={job.id} job={job} kind={kindOf.get(job.kind)} ticked={ticked.includes(job.id)} onTick={tick} />
            ))}
            {jobs.data && shown.length === 0 && (
              <tr>
                <td colSpan={13} className="empty" data-testid="jobs-empty">
                  {isFiltered(filter) ? (
                    <>
                      No jobs match.{" "}
                      <button type="button" className="link-button" onClick={() => setParams({}, { replace: true })}>
                        Clear the filter.
                      </button>
                    </>
                  ) : (
                    <>
                      No jobs yet. <Link to="/new">Start one.</Link>
                    </>
                  )}
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      {shown.length > PAGE && (
        <div className="pager">
          <button type="button" disabled={offset === 0} onClick={() => setPage(page - 1)}>
            previous
          </button>
          <span className="muted">
            {offset + 1}–{Math.min(shown.length, offset + PAGE)} of {shown.length}
          </span>
          <button type="button" disabled={offset + PAGE >= shown.length} onClick={() => setPage(page + 1)}>
            next
          </button>
        </div>
      )}
    </div>
  );
}
