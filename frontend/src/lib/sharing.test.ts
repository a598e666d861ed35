import { describe, expect, it } from "vitest";
import { makeGpu } from "../test/fixtures";
import { devicesToShareNow, shareState, type ShareInput } from "./sharing";

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
  wholeDevicesNow: false,
  on: false,
};

describe("shareState", () => {
  it("reserves the estimate plus the context, and says where it could start now (best fit)", () => {
    const state = shareState(base);
    expect(state.disabledReason).toBeNull();
    expect(state.reserveBytes).toBe(2.5 * GIB);
    expect(state.line).toBe("Could start now by sharing instead of waiting: node-a/1 (3.0 GiB free of reservations).");
  });

  it("says nothing about sharing while whole devices are free now", () => {
    expect(shareState({ ...base, wholeDevicesNow: true }).line).toBeNull();
  });

  it("with the toggle on and no room, says it waits for memory", () => {
    const state = shareState({ ...base, on: true, estimateBytes: 20 * GIB });
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

  it("keeps a job's devices on one node", () => {
    const other = makeGpu({ node: "node-b", index: 0, uuid: "B0", node_shares_memory: true, reservation_room_bytes: 10 * GIB });
    expect(devicesToShareNow([room(0, 10), other], GIB, 2)).toBeNull();
    expect(devicesToShareNow([room(0, 10), room(1, 5), other], GIB, 2)?.map((d) => d.uuid)).toEqual(["G1", "G0"]);
  });
});
