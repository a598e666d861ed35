import { describe, expect, it } from "vitest";
import {
  defaultSchedulingValues,
  formatExpectedStart,
  formatLimit,
  isSchedulingError,
  parseDuration,
  parseJobIds,
  schedulingBody,
  schedulingErrors,
} from "./scheduling";

describe("durations", () => {
  it.each([
    ["90s", 90],
    ["30m", 1800],
    ["2h", 7200],
    ["1d", 86400],
    ["45", 45],
    [" 2H ", 7200],
  ])("reads %s as %i seconds, as the CLI does", (text, seconds) => {
    expect(parseDuration(text)).toBe(seconds);
  });

  it.each(["", "2 h", "1.5h", "-5m", "2w", "0s"])("refuses %j with a hint", (text) => {
    expect(() => parseDuration(text)).toThrow(/duration|at least 1 second/);
  });

  it("writes limits back in the largest whole unit", () => {
    expect([formatLimit(90), formatLimit(1800), formatLimit(7200), formatLimit(172800)]).toEqual(["90s", "30m", "2h", "2d"]);
  });
});

describe("job ids", () => {
  it("reads commas, spaces and #", () => {
    expect(parseJobIds("3, 4 #5")).toEqual([3, 4, 5]);
  });
  it("names the part that is not an id", () => {
    expect(() => parseJobIds("3, x")).toThrow('"x" is not a job id');
    expect(() => parseJobIds("0")).toThrow('"0" is not a job id');
  });
});

describe("expected start", () => {
  const now = Date.parse("2026-01-01T12:00:00Z");
  const at = (seconds: number) => new Date(now + seconds * 1000).toISOString();
  it.each([
    [-40, "now"],
    [10, "now"],
    [12 * 60 + 10, "in ~12 min"],
    [50 * 60, "in ~50 min"],
    [3 * 3600 + 600, "in ~3 h"],
    [4 * 86400, "in ~4 d"],
  ])("%i s ahead reads %s", (seconds, text) => {
    expect(formatExpectedStart(at(seconds), now)).toBe(text);
  });
  it("is unknown without an estimate", () => {
    expect(formatExpectedStart(null, now)).toBe("unknown");
  });
});

describe("the Scheduling fields' body", () => {
  it("queues by default and leaves the rest to the API's defaults", () => {
    expect(schedulingBody(defaultSchedulingValues())).toEqual({ body: { queue: true }, errors: {} });
  });

  it("sends what the user set", () => {
    const values = {
      ...defaultSchedulingValues(),
      "scheduling.queue": false,
      "scheduling.priority": "-5",
      "scheduling.time_limit": "2h",
      "scheduling.depends_on": "3, 4",
      "scheduling.preemptible": true,
      "scheduling.hold": true,
    };
    expect(schedulingBody(values)).toEqual({
      body: { queue: false, priority: -5, time_limit_s: 7200, depends_on: [3, 4], preemptible: true, hold: true },
      errors: {},
    });
  });

  it("says beside the field what it cannot read", () => {
    const values = { ...defaultSchedulingValues(), "scheduling.time_limit": "2 hours", "scheduling.depends_on": "three" };
    const { errors } = schedulingBody(values);
    expect(errors["scheduling.time_limit"]).toMatch(/not a duration/);
    expect(errors["scheduling.depends_on"]).toMatch(/not a job id/);
  });

  it("moves the API's 422 keys onto its fields, and only those", () => {
    expect(schedulingErrors({ "depends_on.0": "unknown job 99", time_limit_s: "too long", "config.steps": "x" })).toEqual({
      "scheduling.depends_on": "unknown job 99",
      "scheduling.time_limit": "too long",
    });
    expect(isSchedulingError("toString")).toBe(false);
    expect(isSchedulingError("config.priority")).toBe(false);
  });
});
