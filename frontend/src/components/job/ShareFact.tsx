import type { Job } from "../../client/types";
import { formatBytes } from "../../lib/format";
import { reservationKillCause } from "../../lib/sharing";

/**
 * The job page's fact for a job sharing its devices by memory: what it reserves on each, and,
 * when the node's watchdog killed it for running over, the cause. Nothing for a whole-device job.
 */
export function ShareFact({ job }: { job: Job }) {
  if (job.share !== "memory") return null;
  const cause = reservationKillCause(job.error_summary);
  return (
    <div>
      <dt>sharing</dt>
      <dd data-testid="job-share">
        shares device(s): reserves {formatBytes(job.reserved_bytes_per_device)} per device
        {cause && (
          <span className="level-text-high" data-testid="job-share-kill">
            {" "}
            · killed for running over its reservation: {cause}
          </span>
        )}
      </dd>
    </div>
  );
}
