import { Link } from "react-router-dom";
import { isTerminal, type Job, type JobKindInfo } from "../../client/types";
import { useFinishedMetrics, useFollowUps, useKind } from "../../hooks/queries";
import { formatAge, formatMetric, numberOrNull } from "../../lib/format";
import { StatusBadge } from "../StatusBadge";

type Figure = JobKindInfo["summary_metrics"][number];

/** How many of the kind's summary figures the list compares: its first ones are its headline
 * (an evaluation's explained variance and loss recovered). */
const COMPARED = 2;

/** One job naming this one: the step it reported at (an evaluation's checkpoint step) and its
 * kind's first summary figures, once it has succeeded. */
function FollowUpRow({ job, figures }: { job: Job; figures: Figure[] }) {
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
      {figures.map((figure) => (
        <td key={figure.metric} className="mono" data-testid="follow-up-figure">
          {formatMetric(figure.metric, numberOrNull(last?.metrics[figure.metric]))}
        </td>
      ))}
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
  const figures = useKind(jobs[0]?.kind ?? "").data?.summary_metrics.slice(0, COMPARED) ?? [];
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
            {figures.map((figure) => (
              <th key={figure.metric}>{figure.label}</th>
            ))}
            <th>created</th>
          </tr>
        </thead>
        <tbody>
          {jobs.map((j) => (
            <FollowUpRow key={j.id} job={j} figures={figures} />
          ))}
        </tbody>
      </table>
    </section>
  );
}
