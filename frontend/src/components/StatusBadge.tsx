import type { Job, JobStatus } from "../client/types";

/**
 * A job's status as a person reads it: a `queued` job that already holds its devices is
 * starting (its worker is launching it), not waiting in the queue.
 */
export function shownStatus(job: Pick<Job, "status" | "devices">): string {
  return job.status === "queued" && job.devices.length > 0 ? "starting" : job.status;
}

export function StatusBadge({ status, devices }: { status: JobStatus; devices?: Job["devices"] }) {
  const shown = shownStatus({ status, devices: devices ?? [] });
  return (
    <span className={`badge status status-${shown}`} data-testid="job-status" data-status={status}>
      {shown}
    </span>
  );
}
