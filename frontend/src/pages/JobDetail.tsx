import { Link, useParams } from "react-router-dom";
import { isTerminal } from "../client/types";
import { Checkpoints } from "../components/job/Checkpoints";
import { FollowUps } from "../components/job/FollowUps";
import { JobActions } from "../components/job/JobActions";
import { JobLabels } from "../components/job/JobLabels";
import { JobSettings } from "../components/job/JobSettings";
import { LogTail } from "../components/job/LogTail";
import { Segments } from "../components/job/Segments";
import { ShareFact } from "../components/job/ShareFact";
import { SlurmCard } from "../components/job/SlurmCard";
import { SourceJob } from "../components/job/SourceJob";
import { SummaryFigures } from "../components/job/SummaryFigures";
import { RankProgress } from "../components/job/RankProgress";
import { RankMemory } from "../components/job/RankMemory";
import { TrainingCharts } from "../components/LossChart";
import { MemoryFigures, onSimulatedDevices } from "../components/MemoryFigures";
import { PageHeader } from "../components/PageHeader";
import { ProgressBar } from "../components/ProgressBar";
import { QueuePlace } from "../components/queue/QueuePlace";
import { StatusBadge } from "../components/StatusBadge";
import { SweepMembership } from "../components/sweep/SweepMembership";
import { useKind, useMapProgress, useFinishedMetrics } from "../hooks/queries";
import { useJob } from "../hooks/useJob";
import { formatAge, formatDuration } from "../lib/format";
import { continuedCurve } from "../lib/lineage";
import { ranksPerNode } from "../lib/ranks";

export function JobDetail() {
  const id = Number(useParams().id);
  const { job, metrics, connected, forbidden } = useJob(id);
  const kind = useKind(job.data?.kind ?? "");
  // a resumed job's charts continue the curve of the job it resumes
  const parent = useFinishedMetrics(job.data?.resume_from_job_id ?? null);
  // a map job (it resumes from its output): each rank's chunks, polled while it runs
  const isMap = kind.data?.resumes_from === "output";
  const live = job.data !== undefined && !isTerminal(job.data.status);
  const ranks = useMapProgress(id, isMap && job.data?.status !== "queued", live);
  if (job.error) return <div className="page banner error">{job.error.message}</div>;
  if (!job.data) return <div className="page muted">Loading job #{id}…</div>;
  const j = job.data;
  const own = metrics.data ?? [];
  const points = continuedCurve(parent.data ?? [], own);
  // Each summary metric's latest value: some come only with some rows (an SAE's held-out
  // figures at checkpoints), so the newest row alone would show them as missing.
  const latest = (metric: string): unknown =>
    own.findLast((row) => (row.metrics as Record<string, unknown>)[metric] !== undefined)?.metrics[metric];
  return (
    <div className="page">
      <PageHeader
        title={
          <>
            <Link to="/jobs" className="muted">
              Jobs
            </Link>{" "}
            / #{j.id} {j.name ?? j.kind}
          </>
        }
        status={
          <>
            <StatusBadge status={j.status} devices={j.devices} />
            {!isTerminal(j.status) && (
              <span className={`conn conn-${connected ? "live" : "connecting"}`}>
                <span className="dot" />
                {connected ? "live" : "polling"}
              </span>
            )}
          </>
        }
      >
        <JobActions job={j} kind={kind.data} />
      </PageHeader>
      <QueuePlace job={j} />
      <SlurmCard job={j} />
      <SweepMembership job={j} />
      <div className="job-labels-bar" data-testid="job-labels-bar">
        <span className="muted small">tags</span>
        <JobLabels job={j} />
      </div>
      <section className="card">
        {isMap && ranks.data && ranks.data.num_chunks !== null ? (
          // a map job counts chunks written (earlier runs' included), not steps
          <ProgressBar value={ranks.data.chunks_done} total={ranks.data.num_chunks} label="chunks written" />
        ) : (
          <ProgressBar value={j.progress.step} total={j.progress.total} label="training progress" />
        )}
        <dl className="facts">
          <div>
            <dt>kind</dt>
            <dd>{j.kind}</dd>
          </div>
          {kind.data?.reads_job_field && <SourceJob job={j} field={kind.data.reads_job_field} reportedStep={own.at(-1)?.step ?? null} />}
          <div>
            <dt>owner</dt>
            <dd>{j.owner}</dd>
          </div>
          <div>
            <dt>GPUs</dt>
            <dd className="mono">
              {j.devices.map((d) => `${d.node}:${d.index}`).join(", ") || (j.cluster ? `${j.cluster} (Slurm)` : "—")}
            </dd>
          </div>
          {ranksPerNode(j.devices).length > 1 && (
            <div>
              <dt>ranks per node</dt>
              <dd className="mono" data-testid="ranks-per-node">
                {ranksPerNode(j.devices)
                  .map(([node, ranks]) => `${node}: ${ranks.join(", ")}`)
                  .join(" · ")}
              </dd>
            </div>
          )}
          <div>
            <dt>created</dt>
            <dd title={j.created_at}>{formatAge(j.created_at)} ago</dd>
          </div>
          <div>
            <dt>{j.status === "running" ? "running for" : "duration"}</dt>
            <dd data-testid="job-duration">{formatDuration(j.started_at, j.finished_at)}</dd>
          </div>
          {j.resume_from_job_id != null && (
            <div>
              <dt>continues</dt>
              <dd>
                <Link to={`/jobs/${j.resume_from_job_id}`} data-testid="continues">
                  job #{j.resume_from_job_id}
                </Link>
              </dd>
            </div>
          )}
          {j.preemptible && (
            <div>
              <dt>preemptible</dt>
              <dd title="may be stopped with a final checkpoint for a higher-priority job, then resumes">yes</dd>
            </div>
          )}
          <div>
            <dt>memory / device</dt>
            <dd>
              <MemoryFigures
                estimateBytes={j.estimate_bytes_per_device}
                peakBytes={j.peak_memory_bytes}
                simulated={onSimulatedDevices(j.devices)}
              />
            </dd>
          </div>
          <ShareFact job={j} />
          <SummaryFigures job={j} figures={kind.data?.summary_metrics ?? []} latest={latest} />
        </dl>
        <RankMemory memory={j.rank_memory} advice={j.advice} />
        {j.error_summary && (
          <p className="banner error" data-testid="job-error-summary">
            {j.error_summary}
          </p>
        )}
        {j.error && (
          <details open={!j.error_summary}>
            <summary className="muted small">traceback</summary>
            <pre className="log error-log" data-testid="job-error">
              {j.error}
            </pre>
          </details>
        )}
      </section>
      {forbidden ? (
        // Another user's job: what its ranks printed and wrote is its owner's (and admins').
        <p className="banner" data-testid="owner-only">
          Only {j.owner}, who owns this job, or an admin can see its metrics, logs and checkpoints.
        </p>
      ) : (
        <>
          <Segments job={j} />
          <FollowUps job={j} offered={kind.data?.offers_follow_up ?? false} />
          {isMap && ranks.data && <RankProgress progress={ranks.data} finished={!live} />}
          {j.started_at == null && points.length === 0 ? (
            // a job that has not run has nothing to chart: one line, not six empty charts
            (kind.data?.charts ?? []).length > 0 && (
              <p className="muted" data-testid="charts-pending">
                Its charts fill in once it starts.
              </p>
            )
          ) : (
            <TrainingCharts points={points} charts={kind.data?.charts ?? []} />
          )}
          <div className="two-col">
            <LogTail job={j} />
            <Checkpoints job={j} resumesFromOutput={isMap} />
          </div>
        </>
      )}
      {/* below the charts and logs a running job is watched for: its config, every field */}
      <JobSettings jobId={j.id} />
    </div>
  );
}
