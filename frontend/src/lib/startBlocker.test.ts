import { describe, expect, it } from "vitest";
import type { Recommendation } from "../client/types";
import { makeGpu, makeRecommendation } from "../test/fixtures";
import { startBlocker, type StartInput } from "./startBlocker";

const GIB = 1024 ** 3;
const base: StartInput = {
  selected: [],
  bytesPerDevice: GIB,
  recommendation: undefined,
  recommendationError: null,
  recommendationUnavailable: false,
  taken: new Map(),
  canWait: false,
  count: 1,
};
const rec = (enough: boolean, message: string) => makeRecommendation({ enough, message });

describe("startBlocker", () => {
  it("waits for a recommendation when choosing by count", () => {
    expect(startBlocker(base)).toBe("Waiting for a recommendation…");
  });

  it("refuses a count the recommender cannot place, in the API's words", () => {
    expect(startBlocker({ ...base, recommendation: rec(false, "does not fit: needs 90 GiB, the largest has 80 GiB") })).toBe(
      "does not fit: needs 90 GiB, the largest has 80 GiB",
    );
    expect(startBlocker({ ...base, recommendation: rec(true, "GPU 0 fits") })).toBeNull();
  });

  it("says the recommender failed, with its error", () => {
    expect(startBlocker({ ...base, recommendationError: "boom", recommendationUnavailable: true })).toBe("No recommendation: boom");
  });

  it("checks each ticked device, not the count's recommendation", () => {
    const small = makeGpu({ index: 3, uuid: "G3", memory_free_bytes: GIB / 2 });
    const roomy = makeGpu({ index: 1, uuid: "G1", memory_free_bytes: 10 * GIB });
    const noFit = rec(false, "no");
    expect(startBlocker({ ...base, selected: [roomy], recommendation: noFit })).toBeNull();
    expect(startBlocker({ ...base, selected: [roomy, small] })).toMatch(/^GPU 3: too small: needs 1\.0 GiB/);
    expect(startBlocker({ ...base, selected: [roomy], taken: new Map([["node-a/G1", 5]]) })).toBe("GPU 1: just taken by job #5");
  });

  it("lets a job that may queue wait for busy devices, never for ones too small", () => {
    const excluded = (reason: Recommendation["excluded"][number]["reason"]) => ({
      node: "node-a",
      uuid: "G0",
      index: 0,
      reason,
      message: reason,
    });
    const busyOnly = makeRecommendation({ excluded: [excluded("held_by_job")] });
    const tooSmall = { ...busyOnly, excluded: [excluded("insufficient_memory")] };
    expect(startBlocker({ ...base, recommendation: busyOnly })).toBe(busyOnly.message);
    expect(startBlocker({ ...base, canWait: true, recommendation: busyOnly })).toBeNull();
    expect(startBlocker({ ...base, canWait: true, recommendation: tooSmall })).toBe(tooSmall.message);
    // a device sharing jobs hold frees when they end, as one held whole does
    const sharedOnly = { ...busyOnly, excluded: [excluded("shared")] };
    expect(startBlocker({ ...base, canWait: true, recommendation: sharedOnly })).toBeNull();
    const busy = makeGpu({ index: 2, held_by: { job_id: 7, job_name: "sweep", owner: "ada" } });
    expect(startBlocker({ ...base, selected: [busy] })).toMatch(/^GPU 2: busy: job #7/);
    expect(startBlocker({ ...base, canWait: true, selected: [busy] })).toBeNull();
  });
});
