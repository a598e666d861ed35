import { Link } from "react-router-dom";
import type { ScheduledJob } from "../../client/types";
import type { HoldAction } from "../../hooks/useHoldReleaseCancel";
import { expectedStartBasis, formatExpectedStart, REASON_LABELS, reasonDetail } from "../../lib/scheduling";
import { ConfirmButton } from "../ConfirmButton";
import "./queue.css";

interface Props {
  jobs: ScheduledJob[];
  onAction: (job: ScheduledJob, action: HoldAction) => void;
  /** the job whose action is in flight: its buttons wait */
  pendingId?: number | null;
  /** ms since the epoch, so expected starts read relative to the same moment */
  now?: number;
}

/**
 * A waiting job's devices: the ones it holds, else how many it needs (JobPublic does not say
 * which devices an explicit request waits for; its reason names them).
 */
export function requestedDevices(job: ScheduledJob): string {
  if (job.devices.length === 0) return `${job.world_size} GPU${job.world_size === 1 ? "" : "s"}`;
  const nodes = new Set(job.devices.map((d) => d.node));
  return job.devices.map((d) => (nodes.size > 1 ? `${d.node}:${d.index}` : `${d.index}`)).join(", ");
}

function Row({ job, onAction, pendingId, now }: Omit<Props, "jobs"> & { job: ScheduledJob }) {
  const info = job.queue;
  const busy = pendingId === job.id;
  return (
    <tr data-testid="queue-row" data-job-id={job.id} data-reason={info?.reason_code}>
      <td className="mono" data-testid="queue-position">
        {info?.position ?? "—"}
      </td>
      <td className="queue-name">
        <Link to={`/jobs/${job.id}`}>
          #{job.id} {job.name ?? job.kind}
        </Link>
      </td>
      <td>{job.owner}</td>
      <td className="mono">{job.priority}</td>
      <td className="mono">{requestedDevices(job)}</td>
      <td className="queue-reason">
        {info && <span className={`badge reason reason-${info.reason_code}`}>{REASON_LABELS[info.reason_code] ?? info.reason_code}</span>}{" "}
        <span className="small" data-testid="queue-reason">
          {info ? reasonDetail(info) : ""}
        </span>
      </td>
      <td title={info ? expectedStartBasis(info) : "no estimate yet"} data-testid="queue-start">
        {formatExpectedStart(info?.expected_start_at, now, info?.expected_start_from_time_limits)}
      </td>
      <td className="queue-actions">
        {job.held ? (
          <button
            type="button"
            className="button small"
            disabled={busy}
            onClick={() => onAction(job, "release")}
            data-testid="queue-release"
          >
            Release
          </button>
        ) : (
          <button type="button" className="button small" disabled={busy} onClick={() => onAction(job, "hold")} data-testid="queue-hold">
            Hold
          </button>
        )}
        <ConfirmButton
          label="Cancel"
          question={`Cancel job #${job.id}?`}
          confirmLabel="Cancel job"
          disabled={busy}
          onConfirm={() => onAction(job, "cancel")}
          testId="queue-cancel"
        />
      </td>
    </tr>
  );
}

/** Waiting jobs in the order they will start, each with why it waits and when it should start. */
export function QueueTable({ jobs, ...rest }: Props) {
  return (
    <table className="queue-table" data-testid="queue-table">
      <thead>
        <tr>
          <th title="position: 1 starts next">#</th>
          <th>job</th>
          <th>owner</th>
          <th>priority</th>
          <th>devices</th>
          <th className="wide">waiting for</th>
          <th>expected start</th>
          <th aria-label="actions" />
        </tr>
      </thead>
      <tbody>
        {jobs.map((job) => (
          <Row key={job.id} job={job} {...rest} />
        ))}
        {jobs.length === 0 && (
          <tr>
            <td colSpan={8} className="empty">
              No job is waiting: every submitted job has its devices.
            </td>
          </tr>
        )}
      </tbody>
    </table>
  );
}
