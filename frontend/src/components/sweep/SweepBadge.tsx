import { Link } from "react-router-dom";
import type { Job } from "../../client/types";
import { paramsText } from "../../lib/sweep/members";

/** On a member's row of the jobs list: "sweep #2", linking to the sweep, its values on hover. */
export function SweepBadge({ job }: { job: Pick<Job, "sweep_id" | "sweep_params"> }) {
  if (job.sweep_id === null || job.sweep_id === undefined) return null;
  return (
    <Link
      to={`/sweeps/${job.sweep_id}`}
      className="badge sweep-badge"
      title={job.sweep_params ? paramsText(job.sweep_params) : undefined}
      data-testid="sweep-badge"
    >
      sweep #{job.sweep_id}
    </Link>
  );
}
