import { Link } from "react-router-dom";
import { isTerminal, type Job, type JobKindInfo } from "../../client/types";
import { useFinishedMetrics, useFollowUps, useKind } from "../../hooks/queries";
import { formatAge, formatMetric, numberOrNull } from "../../lib/format";
import { StatusBadge } from "../StatusBadge";

/** One job naming this one: the step it reported at (an evaluation's checkpoint step) and its
 * kind's first summary figure (explained variance), once it has succeeded. */
function FollowUpRow({ job, figure }: { job: Job; figure: JobKindInfo["summary_metrics"][number] | undefined }) {
  const metrics = useFinishedMetrics(job.status === "succeeded" ? job.id : null);
  const last = metrics.data?.at(-1);
  return (
    <tr data-testid="follow-up-job">
      <td>
        <Link to={`/jobs/${job.id}`}>
          #{job.id} {job.name}
        </Link>
      </td>
      <td className="mono">{job.kind}</td>
      <td>
        <StatusBadge status={job.status} devices={job.devices} />
      </td>
      <td className="mono" data-testid="follow-up-step">
        {last?.step ?? "—"}
      </td>
      {figure && (
        <td className="mono" data-testid="follow-up-figure">
          {formatMetric(figure.metric, numberOrNull(last?.metrics[figure.metric]))}
        </td>
      )}
      <td>{formatAge(job.created_at)} ago</td>
    </tr>
  );
}

/**
 * The jobs that name this one as their source (an SAE job's checkpoint evaluations), newest
 * first, each linked to its page (the figures and the density histogram are there); nothing
 * while there are none.
 */
export function FollowUps({ job, offered }: { job: Job; offered: boolean }) {
  const found = useFollowUps(job.id, offered, !isTerminal(job.status));
  const jobs = found.data ?? [];
  // they are all of one kind (the follow-up's)
  const figure = useKind(jobs[0]?.kind ?? "").data?.summary_metrics[0];
  if (jobs.length === 0) return null;
  return (
    <section className="card">
      <h2>Jobs on this one</h2>
      <table className="segments" data-testid="follow-ups">
        <thead>
          <tr>
            <th>job</th>
            <th>kind</th>
            <th>status</th>
            <th>step</th>
            {figure && <th>{figure.label}</th>}
            <th>created</th>
          </tr>
        </thead>
        <tbody>
          {jobs.map((j) => (
            <FollowUpRow key={j.id} job={j} figure={figure} />
          ))}
        </tbody>
      </table>
    </section>
  );
}
