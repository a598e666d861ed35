import type { ScheduledJob } from "../../client/types";
import { useQueueAction, useWaitingJobRefresh } from "../../hooks/useQueue";
import { formatExpectedStart, REASON_LABELS } from "../../lib/scheduling";
import "./queue.css";

/**
 * On a waiting job's page: its place in the queue, why it waits, when it should start, and
 * hold or release. Nothing for a job that is not queued.
 */
export function QueuePlace({ job, now }: { job: ScheduledJob; now?: number }) {
  useWaitingJobRefresh(job);
  const action = useQueueAction();
  const info = job.queue;
  if (job.status !== "queued" || !info) return null;
  return (
    <section className="card queue-place" data-testid="queue-place" data-reason={info.reason_code}>
      <div>
        <span className="muted small">position</span>{" "}
        <strong className="mono" data-testid="queue-place-position">
          {info.position}
        </strong>{" "}
        <span className="muted small">in the queue</span>
      </div>
      <div>
        <span className={`badge reason reason-${info.reason_code}`}>{REASON_LABELS[info.reason_code] ?? info.reason_code}</span>{" "}
        <span data-testid="queue-place-reason">{info.reason}</span>
      </div>
      <div title={info.expected_start_at ?? "no estimate: held, or waiting on another job"}>
        <span className="muted small">expected start</span>{" "}
        <strong data-testid="queue-place-start">{formatExpectedStart(info.expected_start_at, now)}</strong>
      </div>
      <button
        type="button"
        className="button small"
        disabled={action.isPending}
        onClick={() => action.mutate({ id: job.id, action: job.held ? "release" : "hold" })}
        data-testid={job.held ? "queue-place-release" : "queue-place-hold"}
      >
        {job.held ? "Release" : "Hold"}
      </button>
      {action.error && <span className="field-error">{action.error.message}</span>}
    </section>
  );
}
