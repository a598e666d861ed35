import { Link } from "react-router-dom";
import type { ScheduledJob } from "../client/types";
import { QueueTable } from "../components/queue/QueueTable";
import { useQueue, useQueueAction, type QueueAction } from "../hooks/useQueue";

/**
 * The queue: jobs waiting for devices in the order they will start, why each waits and when it
 * should start, with hold, release and cancel. Polled; a job leaves it when it starts.
 */
export function Queue() {
  const queue = useQueue();
  const action = useQueueAction();
  const onAction = (job: ScheduledJob, what: QueueAction) => action.mutate({ id: job.id, action: what });
  const total = queue.data?.total;
  return (
    <div className="page">
      <div className="page-head">
        <h1>Queue</h1>
        <div className="page-tools">
          {total !== undefined && (
            <span className="muted" data-testid="queue-total">
              {total} waiting
            </span>
          )}
          <Link className="button primary" to="/new">
            New job
          </Link>
        </div>
      </div>
      {queue.error && <div className="banner error">{queue.error.message}</div>}
      {action.error && (
        <div className="banner error" role="alert" data-testid="queue-action-error">
          {action.error.message}
        </div>
      )}
      <div className="card table-card">
        {queue.data ? (
          <QueueTable
            jobs={queue.data.items}
            onAction={onAction}
            pendingId={action.isPending ? action.variables.id : null}
            now={queue.dataUpdatedAt}
          />
        ) : (
          !queue.error && <p className="empty">Loading the queue…</p>
        )}
      </div>
    </div>
  );
}
