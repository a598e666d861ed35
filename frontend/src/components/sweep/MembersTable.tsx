import { useEffect, useMemo, useRef, useState } from "react";
import { Link } from "react-router-dom";
import type { Sweep, SweepMember } from "../../client/sweepTypes";
import type { JobStatus } from "../../client/types";
import {
  filterByStatus,
  isStopped,
  membersCsv,
  membersJson,
  paramText,
  sortMembers,
  type Column,
  type SortBy,
} from "../../lib/sweep/members";
import { tickText } from "../../lib/sweep/scale";
import { expectedStartBasis, formatExpectedStart } from "../../lib/scheduling";
import { ProgressBar } from "../ProgressBar";
import { StatusBadge } from "../StatusBadge";

interface Props {
  sweep: Sweep;
  columns: Column[];
  /** job ids whose curves are drawn */
  ticked: ReadonlySet<number>;
  onTick: (jobIds: number[], on: boolean) => void;
}

// 1,000 rows of cells would be slow to lay out on every poll: the first ROWS, and all on demand
const ROWS = 200;

function save(text: string, name: string, type: string): void {
  const href = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement("a");
  link.href = href;
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(href), 10_000);
}

function cellText(column: Column, member: SweepMember): string {
  const cell = column.value(member);
  if (cell === null) return "—";
  // parameters rounded as everywhere on the page (the exports keep them whole)
  if (column.key.startsWith("param:")) return paramText(cell);
  return typeof cell === "number" ? tickText(cell) : cell;
}

function Row({ member, columns, ticked, onTick }: { member: SweepMember; columns: Column[] } & Pick<Props, "ticked" | "onTick">) {
  // a member stopped before its last step: its figures are those at its stop
  const stoppedAt = isStopped(member) ? `at step ${member.progress.step}, when it stopped (${member.status})` : undefined;
  return (
    <tr data-testid="member-row" data-job-id={member.job_id} data-index={member.index} data-stopped={stoppedAt ? true : undefined}>
      <td>
        <input
          type="checkbox"
          aria-label={`draw member ${member.index}`}
          checked={ticked.has(member.job_id)}
          onChange={(e) => onTick([member.job_id], e.target.checked)}
        />
      </td>
      {columns.map((column) => {
        if (column.key === "status")
          return (
            <td key={column.key} className="member-status" title={member.error_summary ?? undefined}>
              <Link to={`/jobs/${member.job_id}`} data-testid="member-link">
                <StatusBadge status={member.status as JobStatus} /> <span className="small">job #{member.job_id}</span>
              </Link>
              {member.queue && (
                // a waiting member: when it starts (from the running members' rates under max_parallel)
                <div
                  className="small muted"
                  data-testid="member-start"
                  title={`${member.queue.reason}. ${expectedStartBasis(member.queue)}`}
                >
                  {member.queue.position === null ? "in Slurm's queue" : `#${member.queue.position} in the queue`} · starts{" "}
                  {formatExpectedStart(member.queue.expected_start_at, undefined, member.queue.expected_start_from_time_limits)}
                </div>
              )}
            </td>
          );
        if (column.key === "progress")
          return (
            <td key={column.key} className="wide">
              <ProgressBar value={member.progress.step} total={member.progress.total} />
            </td>
          );
        const metric = column.key.startsWith("metric:");
        return (
          <td
            key={column.key}
            className={column.key === "index" ? "" : metric && stoppedAt ? "mono stopped-figure" : "mono"}
            data-column={column.key}
            title={metric ? stoppedAt : undefined}
          >
            {cellText(column, member)}
          </td>
        );
      })}
    </tr>
  );
}

/** Ticks (or unticks) the curves of every member shown: ticked when all are, mixed when some are. */
function TickAll({ members, ticked, onTick }: { members: SweepMember[] } & Pick<Props, "ticked" | "onTick">) {
  const count = members.filter((m) => ticked.has(m.job_id)).length;
  const box = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (box.current) box.current.indeterminate = count > 0 && count < members.length;
  }, [count, members.length]);
  return (
    <input
      ref={box}
      type="checkbox"
      aria-label="draw every member shown"
      checked={members.length > 0 && count === members.length}
      onChange={(e) =>
        onTick(
          members.map((m) => m.job_id),
          e.target.checked,
        )
      }
    />
  );
}

/** The members: sortable by any column (click its head), filtered by status, exported as shown. */
export function MembersTable({ sweep, columns, ticked, onTick }: Props) {
  const [sort, setSort] = useState<SortBy>({ key: "index", descending: false });
  const [statuses, setStatuses] = useState<ReadonlySet<string>>(new Set());
  const [all, setAll] = useState(false);
  const shown = useMemo(
    () => sortMembers(filterByStatus(sweep.members, statuses), columns, sort),
    [sweep.members, statuses, columns, sort],
  );
  const toggle = (status: string, on: boolean) => {
    const next = new Set(statuses);
    if (on) next.add(status);
    else next.delete(status);
    setStatuses(next);
  };
  const base = `sweep-${sweep.id}-members`;
  const visible = all ? shown : shown.slice(0, ROWS);
  return (
    <div className="card table-card" data-testid="members">
      <div className="table-tools">
        <fieldset className="status-filter small" aria-label="filter by status">
          <span className="muted">Show:</span>
          {Object.entries(sweep.counts).map(([status, n]) => (
            <label key={status}>
              <input type="checkbox" checked={statuses.has(status)} onChange={(e) => toggle(status, e.target.checked)} /> {status} ({n})
            </label>
          ))}
        </fieldset>
        <span className="page-tools">
          <button type="button" className="button small" onClick={() => save(membersCsv(shown, columns), `${base}.csv`, "text/csv")}>
            Export CSV
          </button>
          <button
            type="button"
            className="button small"
            onClick={() => save(membersJson(sweep, shown), `${base}.json`, "application/json")}
          >
            Export JSON
          </button>
        </span>
      </div>
      <div className="table-scroll">
        <table className="members-table" data-testid="members-table">
          <thead>
            <tr>
              <th>
                <TickAll members={visible} ticked={ticked} onTick={onTick} />
              </th>
              {columns.map((column) => (
                <th
                  key={column.key}
                  aria-sort={sort.key === column.key ? (sort.descending ? "descending" : "ascending") : undefined}
                  className={column.key === "progress" ? "wide" : undefined}
                >
                  <button
                    type="button"
                    className="link-button sort"
                    data-sort={column.key}
                    onClick={() => setSort({ key: column.key, descending: sort.key === column.key && !sort.descending })}
                  >
                    {column.label}
                    {sort.key === column.key ? (sort.descending ? " ↓" : " ↑") : ""}
                  </button>
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {visible.map((member) => (
              <Row key={member.job_id} member={member} columns={columns} ticked={ticked} onTick={onTick} />
            ))}
            {shown.length === 0 && (
              <tr>
                <td colSpan={columns.length + 1} className="empty">
                  No member has the status ticked.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      {!all && shown.length > ROWS && (
        <p className="empty small">
          {ROWS} of {shown.length} shown.{" "}
          <button type="button" className="link-button" onClick={() => setAll(true)}>
            Show all
          </button>
        </p>
      )}
    </div>
  );
}
