import { describe, expect, it } from "vitest";
import { nodeOfRank, ranksPerNode } from "./ranks";

const devices = [
  { node: "node-b", rank: 3 },
  { node: "node-a", rank: 1 },
  { node: "node-b", rank: 2 },
  { node: "node-a", rank: 0 },
];

describe("ranksPerNode", () => {
  it("groups ranks by node, in node-rank order", () => {
    expect(ranksPerNode(devices)).toEqual([
      ["node-a", [0, 1]],
      ["node-b", [2, 3]],
    ]);
  });

  it("is one group on one node and none without devices", () => {
    expect(ranksPerNode(devices.map((d) => ({ ...d, node: "vm" })))).toEqual([["vm", [0, 1, 2, 3]]]);
    expect(ranksPerNode([])).toEqual([]);
  });

  it("names the node of a rank", () => {
    expect(nodeOfRank(devices, 2)).toBe("node-b");
    expect(nodeOfRank(devices, 9)).toBeNull();
  });
});
