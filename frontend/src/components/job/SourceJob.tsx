import { Link } from "react-router-dom";
import type { Job } from "../../client/types";
import { useJobById } from "../../hooks/queries";

/**
 * The job this one reads (an evaluation's SAE job: the kind's `reads_job_field`), linked with
 * its name, and the step it was read at: the step this job reported its figures at (an
 * evaluation reports at the checkpoint's step), else the config's `step`, else the newest.
 */
export function SourceJob({ job, field, reportedStep }: { job: Job; field: string; reportedStep: number | null }) {
  const named = job.config[field];
  const id = typeof named === "number" ? named : null;
  const source = useJobById(id);
  if (id === null) return null;
  const configured = job.config["step"];
  const step = reportedStep ?? (typeof configured === "number" ? configured : null);
  return (
    <div>
      <dt>source</dt>
      <dd data-testid="source-job">
        <Link to={`/jobs/${id}`}>
          job #{id}
          {source.data ? ` ${source.data.name}` : ""}
        </Link>
        {step !== null ? `, step ${step}` : ", its newest checkpoint"}
      </dd>
    </div>
  );
}
