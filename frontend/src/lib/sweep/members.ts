/**
 * A sweep's members as a table: the columns (index, each parameter, status, progress, the
 * kind's summary metrics), sorting by any of them, filtering by status, and the CSV and JSON
 * the page exports. Pure: values in, values out.
 */
import type { Sweep, SweepMember } from "../../client/sweepTypes";

export type Cell = string | number | null;

export interface Column {
  /** "index", "param:k", "status", "progress", "metric:l0" */
  key: string;
  label: string;
  value: (member: SweepMember) => Cell;
}

export interface SortBy {
  key: string;
  descending: boolean;
}

/** The parameter paths in the order the spec names them (grid, zip, random), then any others. */
export function parameterPaths(sweep: Pick<Sweep, "spec" | "members">): string[] {
  const parameters = (sweep.spec as { parameters?: Record<string, unknown> }).parameters ?? {};
  const named = ["grid", "zip", "random"].flatMap((group) => Object.keys((parameters[group] as object | undefined) ?? {}));
  const seen = new Set(named);
  for (const member of sweep.members) for (const path of Object.keys(member.params)) seen.add(path);
  return [...seen];
}

const asCell = (value: unknown): Cell =>
  value === undefined || value === null ? null : typeof value === "number" || typeof value === "string" ? value : JSON.stringify(value);

export function memberColumns(paths: string[], metrics: { name: string; label: string }[]): Column[] {
  return [
    { key: "index", label: "member", value: (m) => m.index },
    ...paths.map((path) => ({ key: `param:${path}`, label: path, value: (m: SweepMember) => asCell(m.params[path]) })),
    { key: "status", label: "status", value: (m) => m.status },
    {
      key: "progress",
      label: "progress",
      value: (m) => (m.progress.total ? m.progress.step / m.progress.total : null),
    },
    ...metrics.map((s) => ({ key: `metric:${s.name}`, label: s.label, value: (m: SweepMember) => m.metrics[s.name] ?? null })),
  ];
}

/** Numbers by value, text alphabetically; a member without the figure goes last either way. */
export function sortMembers(members: readonly SweepMember[], columns: Column[], sort: SortBy): SweepMember[] {
  const column = columns.find((c) => c.key === sort.key) ?? columns[0];
  if (!column) return [...members];
  const sign = sort.descending ? -1 : 1;
  const keyed = members.map((member) => ({ member, cell: column.value(member) }));
  keyed.sort((a, b) => {
    if (a.cell === null || b.cell === null) return a.cell === b.cell ? a.member.index - b.member.index : a.cell === null ? 1 : -1;
    const order = typeof a.cell === "number" && typeof b.cell === "number" ? a.cell - b.cell : String(a.cell).localeCompare(String(b.cell));
    return sign * order || a.member.index - b.member.index;
  });
  return keyed.map((k) => k.member);
}

/** Ended before its last step, with a final checkpoint: its figures are those at its stop. */
const STOPPED: ReadonlySet<string> = new Set(["stopped_early", "cancelled", "timeout"]);

export function isStopped(member: Pick<SweepMember, "status">): boolean {
  return STOPPED.has(member.status);
}

/** The members whose status is ticked; an empty set keeps them all. */
export function filterByStatus(members: readonly SweepMember[], statuses: ReadonlySet<string>): SweepMember[] {
  return statuses.size === 0 ? [...members] : members.filter((m) => statuses.has(m.status));
}

const csvCell = (cell: Cell): string => {
  if (cell === null) return "";
  const text = String(cell);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

/** One header row (the columns' keys, plus job_id), one row per member. */
export function membersCsv(members: readonly SweepMember[], columns: Column[]): string {
  const header = ["job_id", ...columns.map((c) => c.key.replace(/^(param|metric):/, ""))];
  const rows = members.map((m) => [m.job_id, ...columns.map((c) => c.value(m))].map(csvCell).join(","));
  return [header.map(csvCell).join(","), ...rows].join("\n") + "\n";
}

/** The members as the API gave them, with the sweep's id and name: for scripts and notebooks. */
export function membersJson(sweep: Pick<Sweep, "id" | "name" | "kind">, members: readonly SweepMember[]): string {
  return JSON.stringify({ sweep_id: sweep.id, name: sweep.name, kind: sweep.kind, members }, null, 2) + "\n";
}

/**
 * A parameter's value for reading: whole numbers as they are, others to 3 significant figures
 * (0.004884765 -> "0.00488", 0.00069 -> "0.00069"), text as it is. The exports keep full precision.
 */
export function paramText(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" && Number.isFinite(value) && !Number.isInteger(value)) return String(Number(value.toPrecision(3)));
  return JSON.stringify(value);
}

/** "k=8, lr=0.00488": a member's values, rounded for reading. */
export function paramsText(params: Record<string, unknown>): string {
  return Object.entries(params)
    .map(([path, value]) => `${path}=${paramText(value)}`)
    .join(", ");
}

/** "member 0 (lr=0.00488)": how the page names a member; its job is "job #N". */
export function memberText(member: Pick<SweepMember, "index" | "params">): string {
  const params = paramsText(member.params);
  return params ? `member ${member.index} (${params})` : `member ${member.index}`;
}
