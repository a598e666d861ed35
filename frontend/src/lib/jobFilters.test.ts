import { describe, expect, it } from "vitest";
import { makeJob } from "../test/fixtures";
import { allTags, applyFilter, exitReason, filterFromParams, filterToParams, isFiltered } from "./jobFilters";

const now = Date.parse("2026-06-01T12:00:00Z");
const hoursAgo = (h: number) => new Date(now - h * 3600_000).toISOString();
const jobs = [
  makeJob({
    id: 1,
    name: "sweep-a",
    owner: "ana",
    status: "succeeded",
    tags: ["baseline", "lr"],
    notes: "the run section 4 quotes",
    created_at: hoursAgo(48),
    started_at: hoursAgo(48),
    finished_at: hoursAgo(47),
  }),
  makeJob({
    id: 2,
    name: "probe",
    owner: "bo",
    status: "failed",
    tags: ["lr"],
    created_at: hoursAgo(2),
    started_at: hoursAgo(2),
    finished_at: hoursAgo(1.9),
    error: "Traceback\n  ...\nFileNotFoundError: no datasets dir",
  }),
  makeJob({
    id: 3,
    name: "sweep-b",
    owner: "ana",
    status: "running",
    created_at: hoursAgo(0.5),
    started_at: hoursAgo(0.5),
    finished_at: null,
  }),
];
const base = filterFromParams(new URLSearchParams());

describe("job filters", () => {
  it("round-trips through the URL, leaving defaults out", () => {
    const filter = { ...base, q: "sweep", owner: "ana", since: "24h", sort: "longest" as const };
    expect(filterToParams(filter)).toEqual({ q: "sweep", owner: "ana", since: "24h", sort: "longest" });
    expect(filterFromParams(new URLSearchParams(filterToParams(filter)))).toEqual(filter);
    expect(filterToParams(base)).toEqual({});
    expect(isFiltered(base)).toBe(false);
    expect(filterFromParams(new URLSearchParams("sort=bogus&since=3y"))).toEqual(base);
  });

  it("searches names, filters by owner and time, and sorts", () => {
    expect(applyFilter(jobs, { ...base, q: "SWEEP" }, now).map((j) => j.id)).toEqual([3, 1]);
    expect(applyFilter(jobs, { ...base, owner: "ana", since: "24h" }, now).map((j) => j.id)).toEqual([3]);
    expect(applyFilter(jobs, { ...base, sort: "longest" }, now).map((j) => j.id)).toEqual([1, 3, 2]);
    expect(applyFilter(jobs, { ...base, q: "#2" }, now).map((j) => j.id)).toEqual([2]);
    expect(applyFilter(jobs, { ...base, q: "nothing" }, now)).toEqual([]);
  });

  it("filters by tag and searches tags and notes", () => {
    expect(applyFilter(jobs, { ...base, tag: "lr" }, now).map((j) => j.id)).toEqual([2, 1]);
    expect(applyFilter(jobs, { ...base, tag: "baseline", owner: "bo" }, now)).toEqual([]);
    expect(applyFilter(jobs, { ...base, q: "SECTION 4" }, now).map((j) => j.id)).toEqual([1]);
    expect(applyFilter(jobs, { ...base, q: "baseline" }, now).map((j) => j.id)).toEqual([1]);
    expect(filterToParams({ ...base, tag: "lr" })).toEqual({ tag: "lr" });
    expect(filterFromParams(new URLSearchParams("tag=lr")).tag).toBe("lr");
    expect(isFiltered({ ...base, tag: "lr" })).toBe(true);
    expect(allTags(jobs)).toEqual(["baseline", "lr"]);
  });

  it("gives how each job ended", () => {
    expect(exitReason(jobs[0]!)).toBe("completed");
    expect(exitReason(jobs[1]!)).toBe("FileNotFoundError: no datasets dir");
    expect(exitReason(jobs[2]!)).toBe("");
  });
});
