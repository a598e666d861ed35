import type { JobStatus } from "../client/types";

export function StatusBadge({ status }: { status: JobStatus }) {
  return (
    <span className={`badge status status-${status}`} data-testid="job-status">
      {status}
    </span>
  );
}
