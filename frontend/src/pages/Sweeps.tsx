import { Link } from "react-router-dom";
import type { SweepSummary } from "../client/sweepTypes";
import { PageHeader } from "../components/PageHeader";
import { useSweeps } from "../hooks/useSweeps";
import { formatAge } from "../lib/format";

/** "3 succeeded · 1 running": a sweep's members by status, the ended ones last. */
export function CountsText({ counts }: { counts: Record<string, number> }) {
  const order = ["running", "starting", "queued", "succeeded", "failed", "cancelled", "timeout", "lost"];
  const entries = Object.entries(counts).sort(([a], [b]) => order.indexOf(a) - order.indexOf(b));
  return (
    <span className="sweep-counts">
      {entries.map(([status, n]) => (
        <span key={status} className={`badge status status-${status}`} data-status={status}>
          {n} {status}
        </span>
      ))}
    </span>
  );
}

/** What a sweep varies, a parameter a line: "k 8, 16, 32", "lr 0.0001 to 0.01 log-uniform". */
function SweptText({ swept }: { swept: SweepSummary["swept"] }) {
  if (swept.length === 0) return <span className="muted">—</span>;
  return (
    <ul className="swept-list" data-testid="swept">
      {swept.map((p) => (
        <li
          key={p.path}
          title={p.how === "grid" || p.how === "zip" ? `${p.how} over ${p.path}` : `${p.path} drawn ${p.how.replace("_", "-")}`}
        >
          {p.text}
        </li>
      ))}
    </ul>
  );
}

function SweepRow({ sweep }: { sweep: SweepSummary }) {
  const total = Object.values(sweep.counts).reduce((a, b) => a + b, 0);
  return (
    <tr data-testid="sweep-row" data-sweep-id={sweep.id}>
      <td>
        <Link to={`/sweeps/${sweep.id}`}>
          #{sweep.id} {sweep.name}
        </Link>
      </td>
      <td>
        <SweptText swept={sweep.swept} />
      </td>
      <td>{sweep.kind}</td>
      <td>{total}</td>
      <td>
        <CountsText counts={sweep.counts} />
      </td>
      <td>{sweep.max_parallel ?? "—"}</td>
      <td title={sweep.created_at}>{formatAge(sweep.created_at)}</td>
      <td className="opt">{sweep.owner}</td>
    </tr>
  );
}

/** Every sweep (newest first): what it swept, and its members by status. */
export function Sweeps() {
  const sweeps = useSweeps();
  return (
    <div className="page">
      <PageHeader title="Sweeps" create={{ to: "/new?sweep=1", label: "New sweep" }} />
      {sweeps.error && <div className="banner error">{sweeps.error.message}</div>}
      <div className="card table-card">
        <table data-testid="sweeps-table">
          <thead>
            <tr>
              <th>sweep</th>
              <th>swept</th>
              <th>kind</th>
              <th>members</th>
              <th>by status</th>
              <th>max parallel</th>
              <th>age</th>
              <th className="opt">owner</th>
            </tr>
          </thead>
          <tbody>
            {sweeps.data?.map((s) => (
              <SweepRow key={s.id} sweep={s} />
            ))}
            {sweeps.data?.length === 0 && (
              <tr>
                <td colSpan={8} className="empty">
                  No sweeps yet. <Link to="/new?sweep=1">Start one from the form</Link>, or with <code>gpudeck sweep submit</code>.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </div>
  );
}
