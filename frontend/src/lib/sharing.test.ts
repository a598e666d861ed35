import { describe, expect, it } from "vitest";
import { makeGpu, recommended } from "../test/fixtures";
import { shareState, tickedFitAsShare, type ShareInput } from "./sharing";

const GIB = 1024 ** 3;
const room = (index: number, gib: number | null, shares = true) =>
  makeGpu({ index, uuid: `G${index}`, node_shares_memory: shares, reservation_room_bytes: gib === null ? null : gib * GIB });

const base: ShareInput = {
  devices: [room(0, 10), room(1, 3)],
  selected: [],
  count: 1,
  spreadNodes: null,
  estimateBytes: 2 * GIB,
  contextReserveBytes: 0.5 * GIB,
  // whole devices would wait; the API would share node-a/1, the tightest room that holds it
  recommendation: { enough: false, could_share: true, share_devices: [recommended(room(1, 3))] },
  on: false,
};
const noShare = { enough: false, could_share: false, share_devices: [] };

describe("shareState", () => {
  it("reserves the estimate plus the context, and says where it could start now (best fit)", () => {
    const state = shareState(base);
    expect(state.disabledReason).toBeNull();
    expect(state.reserveBytes).toBe(2.5 * GIB);
    expect(state.line).toBe("Could start now by sharing instead of waiting: node-a/1 (3.0 GiB free of reservations).");
  });

  it("says nothing about sharing while whole devices are free now", () => {
    expect(shareState({ ...base, recommendation: { ...base.recommendation!, enough: true } }).line).toBeNull();
  });

  it("takes the API's word that it cannot share now, even where a device's room looks big enough", () => {
    // e.g. another user's job shares node-a/0 and the node keeps users apart: only the API knows
    expect(shareState({ ...base, recommendation: noShare }).line).toBeNull();
    expect(shareState({ ...base, recommendation: undefined }).line).toBeNull(); // still asking
  });

  it("with the toggle on and no room, says it waits for memory", () => {
    const state = shareState({ ...base, on: true, estimateBytes: 20 * GIB, recommendation: noShare });
    expect(state.startsNow).toBe(false);
    expect(state.line).toBe("Waits for memory: no device has 20.5 GiB free of reservations now.");
  });

  it.each([
    [{ estimateBytes: null }, "no memory estimate for this job: a sharing job reserves its estimate"],
    [{ spreadNodes: 2 }, "a job spread over several nodes cannot share devices"],
    [{ devices: [room(0, null, false)] }, "no node allows sharing devices"],
    [{ selected: [room(0, null, false)] }, "the chosen devices' node does not allow sharing"],
  ] as const)("is disabled with the reason: %o", (change, reason) => {
    expect(shareState({ ...base, ...change }).disabledReason).toContain(reason);
  });

  it("checks ticked devices itself: one sharing node, room on each", () => {
    const other = makeGpu({ node: "node-b", index: 0, uuid: "B0", node_shares_memory: true, reservation_room_bytes: 10 * GIB });
    expect(tickedFitAsShare([room(0, 10), room(1, 5)], 4 * GIB)).toBe(true);
    expect(tickedFitAsShare([room(0, 10), room(1, 3)], 4 * GIB)).toBe(false);
    expect(tickedFitAsShare([room(0, 10), other], GIB)).toBe(false);
    const state = shareState({ ...base, selected: [room(0, 10)], recommendation: noShare, on: true });
    expect(state.line).toBe("Starts now, sharing node-a/0 (10.0 GiB free of reservations).");
  });
});
