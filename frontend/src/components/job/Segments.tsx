import type { Job } from "../../client/types";
import { isTerminal } from "../../client/types";
import { useSegments } from "../../hooks/queries";
import { formatDuration } from "../../lib/format";

/**
 * A preemptible job's history: one row per stretch on devices. A job stopped for a
 * higher-priority one (with a final checkpoint) waits again and resumes in a new stretch,
 * its steps continuing; nothing shows until it has been preempted once.
 */
export function Segments({ job }: { job: Job }) {
  const segments = useSegments(job.id, job.preemptible, !isTerminal(job.status));
  const items = segments.data ?? [];
  if (!items.some((s) => s.outcome === "preempted")) return null;
  return (
    <section className="card">
      <h2>History</h2>
      <table className="segments" data-testid="segments">
        <thead>
          <tr>
            <th>#</th>
            <th>ran for</th>
            <th>until step</th>
            <th>ended</th>
          </tr>
        </thead>
        <tbody>
          {items.map((s, i) => (
            <tr key={i} data-testid="segment">
              <td className="mono">{i + 1}</td>
              <td>{formatDuration(s.started_at, s.ended_at)}</td>
              <td className="mono">{s.last_step ?? "—"}</td>
              <td>{s.outcome === null ? "running" : s.outcome === "preempted" ? (s.reason ?? "preempted") : s.outcome}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
