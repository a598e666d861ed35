import { Link } from "react-router-dom";
import { isTerminal, type Job } from "../../client/types";
import { useFollowUps } from "../../hooks/queries";
import { formatAge } from "../../lib/format";
import { StatusBadge } from "../StatusBadge";

/**
 * The jobs that name this one as their source (an SAE job's checkpoint evaluations), newest
 * first, each linked to its page (the figures and the density histogram are there); nothing
 * while there are none.
 */
export function FollowUps({ job, offered }: { job: Job; offered: boolean }) {
  const found = useFollowUps(job.id, offered, !isTerminal(job.status));
  const jobs = found.data ?? [];
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
            <th>created</th>
          </tr>
        </thead>
        <tbody>
          {jobs.map((j) => (
            <tr key={j.id} data-testid="follow-up-job">
              <td>
                <Link to={`/jobs/${j.id}`}>
                  #{j.id} {j.name}
                </Link>
              </td>
              <td className="mono">{j.kind}</td>
              <td>
                <StatusBadge status={j.status} devices={j.devices} />
              </td>
              <td>{formatAge(j.created_at)} ago</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
