import { Link } from "react-router-dom";
import { deviceKey, type GpuBusyDetail } from "../../client/types";

/** A 409: which devices another job took first, with a link to it. */
export function Conflict({ detail }: { detail: GpuBusyDetail }) {
  return (
    <div className="banner error" role="alert" data-testid="conflict">
      <strong>Those GPUs were taken first.</strong> {detail.message}
      <ul>
        {detail.busy.map((b) => (
          <li key={deviceKey(b)}>
            GPU {b.index}
            {b.held_by_job_id !== null ? (
              <>
                {" "}
                is held by <Link to={`/jobs/${b.held_by_job_id}`}>job #{b.held_by_job_id}</Link>
              </>
            ) : (
              " is in use"
            )}
          </li>
        ))}
      </ul>
      Pick other devices or take the new recommendation.
    </div>
  );
}
