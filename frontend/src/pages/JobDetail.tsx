import { useState } from "react";
import { Link, useNavigate, useParams } from "react-router-dom";
import { downloadFile, getAuthToken } from "../client/api";
import { isTerminal, type CheckpointFile, type Job } from "../client/types";
import { TrainingCharts } from "../components/LossChart";
import { ProgressBar } from "../components/ProgressBar";
import { StatusBadge } from "../components/StatusBadge";
import { useCancelJob, useCheckpoints, useJobLogs, useResumeJob } from "../hooks/queries";
import { useJob } from "../hooks/useJob";
import { formatAge, formatBytes, formatCompact, formatDuration } from "../lib/format";

function LogTail({ job }: { job: Job }) {
  const ranks = Math.max(1, job.world_size);
  const [rank, setRank] = useState(0);
  const logs = useJobLogs(job.id, rank, 200, !isTerminal(job.status));
  const text = logs.data ?? "";
  return (
    <section className="card">
      <div className="section-head">
        <h2>Logs</h2>
        {ranks > 1 && (
          <div className="segmented small" role="group" aria-label="rank">
            {Array.from({ length: ranks }, (_, r) => (
              <button key={r} type="button" aria-pressed={rank === r} onClick={() => setRank(r)}>
                rank {r}
              </button>
            ))}
          </div>
        )}
      </div>
      <pre className="log" data-testid="log-tail">
        {text.trim() === "" ? <span className="muted">{logs.error ? logs.error.message : "no output yet"}</span> : text}
      </pre>
    </section>
  );
}

function CheckpointLink({ file }: { file: CheckpointFile }) {
  const [error, setError] = useState<string | null>(null);
  return (
    <a
      className="file-link"
      href={file.url}
      download={file.name}
      title={error ?? formatBytes(file.size_bytes)}
      onClick={(event) => {
        if (!getAuthToken()) return; // a plain download works without a token
        event.preventDefault();
        downloadFile(file.url, file.name).catch((e: Error) => setError(e.message));
      }}
    >
      {file.name}
      {error && <span className="field-error"> ({error})</span>}
    </a>
  );
}

function Checkpoints({ job }: { job: Job }) {
  const checkpoints = useCheckpoints(job.id, !isTerminal(job.status));
  const items = checkpoints.data ?? [];
  return (
    <section className="card">
      <h2>Checkpoints</h2>
      {items.length === 0 ? (
        <p className="muted">None yet: rank 0 writes one every {String(job.config["checkpoint_interval"] ?? "?")} steps.</p>
      ) : (
        <table className="checkpoints" data-testid="checkpoints">
          <thead>
            <tr>
              <th>step</th>
              <th>loss</th>
              <th>files</th>
              <th>written</th>
            </tr>
          </thead>
          <tbody>
            {[...items].sort((a, b) => b.step - a.step).map((c) => (
              <tr key={c.step}>
                <td className="mono">{c.step}</td>
                <td className="mono">{formatCompact(c.loss ?? null)}</td>
                <td>
                  {c.files.map((f) => (
                    <CheckpointLink key={f.name} file={f} />
                  ))}
                  <span className="muted small">{formatBytes(c.size_bytes)}</span>
                </td>
                <td>{formatAge(c.created_at)} ago</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function Actions({ job }: { job: Job }) {
  const navigate = useNavigate();
  const cancel = useCancelJob(job.id);
  const resume = useResumeJob(job.id);
  const terminal = isTerminal(job.status);
  return (
    <div className="actions">
      {!terminal && (
        <button type="button" className="button danger" disabled={cancel.isPending} onClick={() => cancel.mutate()} data-testid="cancel">
          {cancel.isPending ? "Cancelling…" : "Cancel"}
        </button>
      )}
      {terminal && job.status !== "succeeded" && (
        <button
          type="button"
          className="button"
          disabled={resume.isPending}
          onClick={() => resume.mutate(undefined, { onSuccess: (next) => navigate(`/jobs/${next.id}`) })}
          data-testid="resume"
        >
          Resume from last checkpoint
        </button>
      )}
      {(cancel.error ?? resume.error) && <span className="field-error">{(cancel.error ?? resume.error)?.message}</span>}
    </div>
  );
}

export function JobDetail() {
  const id = Number(useParams().id);
  const { job, metrics, connected } = useJob(id);
  if (job.error) return <div className="page banner error">{job.error.message}</div>;
  if (!job.data) return <div className="page muted">Loading job #{id}…</div>;
  const j = job.data;
  const points = metrics.data ?? [];
  const last = points[points.length - 1]?.metrics;
  return (
    <div className="page">
      <div className="page-head">
        <h1>
          <Link to="/jobs" className="muted">
            Jobs
          </Link>{" "}
          / #{j.id} {j.name ?? j.kind}
        </h1>
        <div className="page-tools">
          <StatusBadge status={j.status} />
          {!isTerminal(j.status) && <span className={`conn conn-${connected ? "live" : "connecting"}`}><span className="dot" />{connected ? "live" : "polling"}</span>}
          <Actions job={j} />
        </div>
      </div>
      <section className="card">
        <ProgressBar value={j.progress.step} total={j.progress.total} label="training progress" />
        <dl className="facts">
          <div><dt>kind</dt><dd>{j.kind}</dd></div>
          <div><dt>owner</dt><dd>{j.owner}</dd></div>
          <div><dt>GPUs</dt><dd className="mono">{j.devices.map((d) => `${d.node}:${d.index}`).join(", ") || "—"}</dd></div>
          <div><dt>created</dt><dd title={j.created_at}>{formatAge(j.created_at)} ago</dd></div>
          <div><dt>running for</dt><dd>{formatDuration(j.started_at, j.finished_at)}</dd></div>
          <div><dt>estimate / device</dt><dd>{formatBytes(j.estimate_bytes_per_device)}</dd></div>
          <div><dt>peak / device</dt><dd>{formatBytes(j.peak_memory_bytes)}</dd></div>
          <div><dt>loss</dt><dd data-testid="last-loss">{formatCompact(last?.overall_loss)}</dd></div>
          <div><dt>L0</dt><dd>{formatCompact(last?.l0)}</dd></div>
          <div><dt>explained var.</dt><dd>{formatCompact(last?.explained_variance)}</dd></div>
          <div><dt>dead features</dt><dd>{formatCompact(last?.dead_features)}</dd></div>
        </dl>
        {j.error && <pre className="log error-log" data-testid="job-error">{j.error}</pre>}
      </section>
      <TrainingCharts points={points} />
      <div className="two-col">
        <LogTail job={j} />
        <Checkpoints job={j} />
      </div>
    </div>
  );
}
