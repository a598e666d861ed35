import type { ScheduledJob } from "../../client/types";
import { useHoldReleaseCancel } from "../../hooks/useHoldReleaseCancel";
import { useWaitingJobRefresh } from "../../hooks/useQueue";
import { expectedStartBasis, formatExpectedStart, REASON_LABELS, reasonDetail } from "../../lib/scheduling";
import "./queue.css";

/**
 * On a waiting job's page: its place in the queue, why it waits, when it should start, and
 * hold or release. Nothing for a job that is not queued.
 */
export function QueuePlace({ job, now }: { job: ScheduledJob; now?: number }) {
  useWaitingJobRefresh(job);
  const actions = useHoldReleaseCancel({ type: "job", id: job.id });
  const info = job.queue;
  if (job.status !== "queued" || !info) return null;
  return (
    <section className="card queue-place" data-testid="queue-place" data-reason={info.reason_code}>
      {info.position === null ? (
        // a job on a Slurm cluster: Slurm orders its own queue
        <div className="muted small">in the Slurm cluster's queue</div>
      ) : (
        <div>
          <span className="muted small">position</span>{" "}
          <strong className="mono" data-testid="queue-place-position">
            {info.position}
          </strong>{" "}
          <span className="muted small">in the queue</span>
        </div>
      )}
      <div>
        <span className={`badge reason reason-${info.reason_code}`}>{REASON_LABELS[info.reason_code] ?? info.reason_code}</span>{" "}
        <span data-testid="queue-place-reason">{reasonDetail(info)}</span>
      </div>
      <div title={expectedStartBasis(info)}>
        <span className="muted small">expected start</span>{" "}
        <strong data-testid="queue-place-start">
          {formatExpectedStart(info.expected_start_at, now, info.expected_start_from_time_limits)}
        </strong>
        {info.expected_start_from_time_limits && <span className="muted small"> (a job ahead has no measured rate yet)</span>}
      </div>
      <button
        type="button"
        className="button small"
        disabled={actions.pending !== null}
        onClick={job.held ? actions.release : actions.hold}
        data-testid={job.held ? "queue-place-release" : "queue-place-hold"}
      >
        {job.held ? "Release" : "Hold"}
      </button>
      {actions.error && <span className="field-error">{actions.error.message}</span>}
    </section>
  );
}
