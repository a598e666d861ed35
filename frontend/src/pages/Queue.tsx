import type { ScheduledJob } from "../client/types";
import { PageHeader } from "../components/PageHeader";
import { QueueTable } from "../components/queue/QueueTable";
import type { HoldAction } from "../hooks/useHoldReleaseCancel";
import { useQueue, useQueueAction } from "../hooks/useQueue";

/**
 * The queue: jobs waiting for devices in the order they will start, why each waits and when it
 * should start, with hold, release and cancel. Polled; a job leaves it when it starts.
 */
export function Queue() {
  const queue = useQueue();
  const action = useQueueAction();
  const onAction = (job: ScheduledJob, what: HoldAction) => action.mutate({ id: job.id, action: what });
  const total = queue.data?.total;
  return (
    <div className="page">
      <PageHeader
        title="Queue"
        status={
          total !== undefined && (
            <span className="muted" data-testid="queue-total">
              {total} waiting
            </span>
          )
        }
        create={{ to: "/new", label: "New job" }}
      />
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
