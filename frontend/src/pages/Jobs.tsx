import { useMemo, useState } from "react";
import { Link, useSearchParams } from "react-router-dom";
import type { Job } from "../client/types";
import { JobFilterBar } from "../components/JobFilterBar";
import { PageHeader } from "../components/PageHeader";
import { ProgressBar } from "../components/ProgressBar";
import { StatusBadge } from "../components/StatusBadge";
import { SweepBadge } from "../components/sweep/SweepBadge";
import { useJobs } from "../hooks/queries";
import { formatAge, formatDuration } from "../lib/format";
import { applyFilter, exitReason, filterFromParams, filterToParams, isFiltered } from "../lib/jobFilters";

const PAGE = 25;
// the newest jobs the list searches (the API's page limit); older ones are in `gpudeck jobs`
const WINDOW = 500;

function devicesText(job: Job): string {
  if (job.devices.length === 0) return "—";
  const nodes = new Set(job.devices.map((d) => d.node));
  return job.devices.map((d) => (nodes.size > 1 ? `${d.node}:${d.index}` : `${d.index}`)).join(", ");
}

function JobRow({ job }: { job: Job }) {
  return (
    <tr data-testid="job-row" data-job-id={job.id}>
      <td className="job-name">
        <Link to={`/jobs/${job.id}`}>
          #{job.id} {job.name ?? job.kind}
        </Link>
        <SweepBadge job={job} />
      </td>
      <td>
        <StatusBadge status={job.status} devices={job.devices} />
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
  const shown = applyFilter(all, filter);
  const offset = Math.min(page * PAGE, Math.max(0, shown.length - 1));
  return (
    <div className="page">
      <PageHeader title="Jobs" create={{ to: "/new", label: "New job" }} />
      <JobFilterBar
        filter={filter}
        owners={owners}
        onChange={(next) => {
          setParams(filterToParams(next), { replace: true });
          setPage(0);
        }}
      />
      {jobs.error && <div className="banner error">{jobs.error.message}</div>}
      <div className="card table-card">
        <table className="jobs-table" data-testid="jobs-table">
          <thead>
            <tr>
              <th>job</th>
              <th>status</th>
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
              <JobRow key={job.id} job={job} />
            ))}
            {jobs.data && shown.length === 0 && (
              <tr>
                <td colSpan={9} className="empty" data-testid="jobs-empty">
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
