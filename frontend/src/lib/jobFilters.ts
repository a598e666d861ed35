import type { Job, JobStatus } from "../client/types";

export type SortKey = "newest" | "oldest" | "longest" | "name";
export const SORTS: readonly SortKey[] = ["newest", "oldest", "longest", "name"];
/** "since" windows, in hours; "" is any time */
export const SINCE: Readonly<Record<string, number>> = { "1h": 1, "24h": 24, "7d": 24 * 7, "30d": 24 * 30 };

/** The jobs list's filter, as kept in the URL (?q=&tag=&status=&owner=&since=&sort=). */
export interface JobFilter {
  q: string;
  /** a tag the job carries (GET /api/jobs?tag= is the same filter) */
  tag: string;
  status: JobStatus | null;
  owner: string;
  since: string;
  sort: SortKey;
}

export function filterFromParams(params: URLSearchParams): JobFilter {
  const sort = params.get("sort") as SortKey | null;
  const since = params.get("since") ?? "";
  return {
    q: params.get("q") ?? "",
    tag: params.get("tag") ?? "",
    status: (params.get("status") as JobStatus | null) || null,
    owner: params.get("owner") ?? "",
    since: since in SINCE ? since : "",
    sort: sort && SORTS.includes(sort) ? sort : "newest",
  };
}

/** Only the fields that differ from the defaults, so a plain /jobs stays plain. */
export function filterToParams(filter: JobFilter): Record<string, string> {
  const out: Record<string, string> = {};
  if (filter.q) out["q"] = filter.q;
  if (filter.tag) out["tag"] = filter.tag;
  if (filter.status) out["status"] = filter.status;
  if (filter.owner) out["owner"] = filter.owner;
  if (filter.since) out["since"] = filter.since;
  if (filter.sort !== "newest") out["sort"] = filter.sort;
  return out;
}

export function isFiltered(filter: JobFilter): boolean {
  return Object.keys(filterToParams({ ...filter, sort: "newest" })).length > 0;
}

/** Seconds from start to end (or now, while it runs); null before it started. */
export function elapsedSeconds(job: Job, now = Date.now()): number | null {
  if (!job.started_at) return null;
  return Math.max(0, ((job.finished_at ? Date.parse(job.finished_at) : now) - Date.parse(job.started_at)) / 1000);
}

/** How the job ended, in a few words (sacct's ExitCode/State column): the error's cause line, or the status. */
export function exitReason(job: Job): string {
  if (job.status === "cancelled") return job.cancel_requested ? "cancelled by a user" : "cancelled";
  if (job.status === "failed" || job.status === "lost") {
    const firstLine = job.error_summary ?? job.error?.trim().split("\n").at(-1) ?? null;
    return firstLine ? firstLine : job.status;
  }
  return job.status === "succeeded" ? "completed" : "";
}

/** What the search box looks in: id, name, kind, tags and notes (the API's ?q= minus the id). */
function searchText(job: Job): string {
  return `#${job.id} ${job.name ?? ""} ${job.kind} ${(job.tags ?? []).join(" ")} ${job.notes ?? ""}`.toLowerCase();
}

/** Every tag on the jobs, for the tag filter's choices. */
export function allTags(jobs: readonly Job[]): string[] {
  return [...new Set(jobs.flatMap((j) => j.tags ?? []))].sort();
}

export function applyFilter(jobs: readonly Job[], filter: JobFilter, now = Date.now()): Job[] {
  const q = filter.q.trim().toLowerCase();
  const hours = SINCE[filter.since];
  const after = hours !== undefined ? now - hours * 3600_000 : -Infinity;
  const kept = jobs.filter(
    (job) =>
      (!q || searchText(job).includes(q)) &&
      (!filter.tag || (job.tags ?? []).includes(filter.tag)) &&
      (!filter.status || job.status === filter.status) &&
      (!filter.owner || job.owner === filter.owner) &&
      Date.parse(job.created_at) >= after,
  );
  const by: Record<SortKey, (a: Job, b: Job) => number> = {
    newest: (a, b) => b.id - a.id,
    oldest: (a, b) => a.id - b.id,
    longest: (a, b) => (elapsedSeconds(b, now) ?? -1) - (elapsedSeconds(a, now) ?? -1),
    name: (a, b) => (a.name ?? a.kind).localeCompare(b.name ?? b.kind),
  };
  return [...kept].sort(by[filter.sort]);
}
