import { describe, expect, it } from "vitest";
import { newJobBody, type NewJobInput } from "./newJobBody";

const base: NewJobInput = {
  kind: "sae",
  config: { k: 8 },
  devices: [],
  count: 2,
  nodes: null,
  name: "",
  scheduling: { queue: true },
};

describe("newJobBody", () => {
  it("asks for a count when no device is ticked, and leaves a blank name out", () => {
    expect(newJobBody({ ...base, name: "   " })).toEqual({ kind: "sae", config: { k: 8 }, count: 2, queue: true });
  });

  it("sends the ticked devices by node and uuid, and no count beside them", () => {
    const devices = [
      { node: "a", uuid: "GPU-1", index: 0 },
      { node: "b", uuid: "GPU-2", index: 3 },
    ];
    const body = newJobBody({ ...base, devices, count: 5, nodes: 2 });
    expect(body.devices).toEqual([
      { node: "a", uuid: "GPU-1" },
      { node: "b", uuid: "GPU-2" },
    ]);
    expect(body).not.toHaveProperty("count");
    expect(body).not.toHaveProperty("nodes");
  });

  it("spreads a count over its nodes, trims the name and carries the scheduling fields", () => {
    const scheduling = { queue: false, priority: 3, depends_on: [4] };
    expect(newJobBody({ ...base, count: 4, nodes: 2, name: " run a ", scheduling })).toEqual({
      kind: "sae",
      config: { k: 8 },
      count: 4,
      nodes: 2,
      name: "run a",
      queue: false,
      priority: 3,
      depends_on: [4],
    });
  });
});
