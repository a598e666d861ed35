import { Link } from "react-router-dom";
import type { Job } from "../../client/types";
import { useSweep } from "../../hooks/useSweeps";
import { paramsText } from "../../lib/sweep/members";

/** On a member's job page: "member 3 of sweep #2 (k=8, lr=0.004)", linking to the sweep. */
export function SweepMembership({ job }: { job: Pick<Job, "id" | "sweep_id" | "sweep_params"> }) {
  const sweepId = job.sweep_id ?? null;
  const sweep = useSweep(sweepId, false);
  if (sweepId === null) return null;
  const index = sweep.data?.members.find((m) => m.job_id === job.id)?.index;
  const values = job.sweep_params ? paramsText(job.sweep_params) : "";
  return (
    <p className="sweep-membership" data-testid="sweep-membership">
      <Link to={`/sweeps/${sweepId}`}>
        member{index !== undefined ? ` ${index}` : ""} of sweep #{sweepId}
        {values ? ` (${values})` : ""}
      </Link>
      {sweep.data && (
        <span className="muted">
          {" "}
          · {sweep.data.name}, {sweep.data.members.length} members
        </span>
      )}
    </p>
  );
}
