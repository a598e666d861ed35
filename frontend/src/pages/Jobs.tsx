import { useState } from "react";
import { Link } from "react-router-dom";
import { ALL_STATUSES, type Job, type JobStatus } from "../client/types";
import { ProgressBar } from "../components/ProgressBar";
import { StatusBadge } from "../components/StatusBadge";
import { useJobs } from "../hooks/queries";
import { formatAge } from "../lib/format";

const PAGE = 25;

function devicesText(job: Job): string {
  if (job.devices.length === 0) return "—";
  const nodes = new Set(job.devices.map((d) => d.node));
  return job.devices.map((d) => (nodes.size > 1 ? `${d.node}:${d.index}` : `${d.index}`)).join(", ");
}

export function Jobs() {
  const [status, setStatus] = useState<JobStatus | null>(null);
  const [offset, setOffset] = useState(0);
  const jobs = useJobs(status, PAGE, offset);
  const total = jobs.data?.total ?? 0;
  return (
    <div className="page">
      <div className="page-head">
        <h1>Jobs</h1>
        <div className="page-tools">
          <select
            aria-label="status filter"
            value={status ?? ""}
            onChange={(e) => {
              setStatus((e.target.value || null) as JobStatus | null);
              setOffset(0);
            }}
          >
            <option value="">all statuses</option>
            {ALL_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
          <Link className="button primary" to="/new">
            New job
          </Link>
        </div>
      </div>
      {jobs.error && <div className="banner error">{jobs.error.message}</div>}
      <div className="card table-card">
        <table className="jobs-table" data-testid="jobs-table">
          <thead>
            <tr>
              <th>job</th>
              <th>status</th>
              <th>GPUs</th>
              <th className="wide">progress</th>
              <th>age</th>
              <th>owner</th>
            </tr>
          </thead>
          <tbody>
            {jobs.data?.items.map((job) => (
              <tr key={job.id} data-testid="job-row" data-job-id={job.id}>
                <td>
                  <Link to={`/jobs/${job.id}`}>
                    #{job.id} {job.name ?? job.kind}
                  </Link>
                </td>
                <td>
                  <StatusBadge status={job.status} />
                </td>
                <td className="mono">{devicesText(job)}</td>
                <td className="wide">
                  <ProgressBar value={job.progress.step} total={job.progress.total} />
                </td>
                <td title={job.created_at}>{formatAge(job.created_at)}</td>
                <td>{job.owner}</td>
              </tr>
            ))}
            {jobs.data && jobs.data.items.length === 0 && (
              <tr>
                <td colSpan={6} className="empty">
                  No jobs yet. <Link to="/new">Start one.</Link>
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      {total > PAGE && (
        <div className="pager">
          <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
            previous
          </button>
          <span className="muted">
            {offset + 1}–{Math.min(total, offset + PAGE)} of {total}
          </span>
          <button type="button" disabled={offset + PAGE >= total} onClick={() => setOffset(offset + PAGE)}>
            next
          </button>
        </div>
      )}
    </div>
  );
}
