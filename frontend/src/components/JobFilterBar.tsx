import { ALL_STATUSES, type JobStatus } from "../client/types";
import { SINCE, SORTS, type JobFilter, type SortKey } from "../lib/jobFilters";

interface Props {
  filter: JobFilter;
  owners: string[];
  /** every tag on the listed jobs */
  tags?: string[];
  onChange: (next: JobFilter) => void;
}

/** Search, tag, status, owner, time and sort for the jobs list (its state lives in the URL). */
export function JobFilterBar({ filter, owners, tags = [], onChange }: Props) {
  return (
    <div className="filter-bar" role="search">
      <input
        type="search"
        aria-label="search jobs"
        placeholder="name, kind, #id, tag or notes"
        value={filter.q}
        onChange={(e) => onChange({ ...filter, q: e.target.value })}
      />
      <select aria-label="tag filter" value={filter.tag} onChange={(e) => onChange({ ...filter, tag: e.target.value })}>
        <option value="">all tags</option>
        {/* a tag from the URL that no listed job carries stays choosable */}
        {[...new Set([...tags, ...(filter.tag ? [filter.tag] : [])])].map((t) => (
          <option key={t} value={t}>
            {t}
          </option>
        ))}
      </select>
      <select
        aria-label="status filter"
        value={filter.status ?? ""}
        onChange={(e) => onChange({ ...filter, status: (e.target.value || null) as JobStatus | null })}
      >
        <option value="">all statuses</option>
        {ALL_STATUSES.map((s) => (
          <option key={s} value={s}>
            {s}
          </option>
        ))}
      </select>
      <select aria-label="owner filter" value={filter.owner} onChange={(e) => onChange({ ...filter, owner: e.target.value })}>
        <option value="">all owners</option>
        {owners.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
      <select aria-label="time filter" value={filter.since} onChange={(e) => onChange({ ...filter, since: e.target.value })}>
        <option value="">any time</option>
        {Object.keys(SINCE).map((s) => (
          <option key={s} value={s}>
            last {s}
          </option>
        ))}
      </select>
      <select aria-label="sort" value={filter.sort} onChange={(e) => onChange({ ...filter, sort: e.target.value as SortKey })}>
        {SORTS.map((s) => (
          <option key={s} value={s}>
            {s}
          </option>
        ))}
      </select>
    </div>
  );
}
