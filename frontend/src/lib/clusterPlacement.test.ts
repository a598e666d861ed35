import { describe, expect, it } from "vitest";
import type { ClusterState } from "../client/clusterTypes";
import { clusterBody, clusterProblem, partitionSummary } from "./clusterPlacement";

const node = (name: string, partitions: string[], gpus: { type: string | null; count: number; used: number }[]) => ({
  name,
  state: "idle",
  partitions,
  cpus: 8,
  cpus_allocated: 0,
  memory_mb: 8192,
  memory_allocated_mb: 0,
  gpus: gpus.map((g) => ({ ...g, used_indices: [] })),
});

const STATE: ClusterState = {
  name: "lab",
  reachable: true,
  cause: null,
  nodes: [
    node("a", ["gpu"], [{ type: "h100", count: 4, used: 1 }]),
    node(
      "b",
      ["gpu"],
      [
        { type: "a100", count: 1, used: 0 },
        { type: "h100", count: 1, used: 1 },
      ],
    ),
    node("c", ["cpu"], []),
  ],
  read_in_s: 0.1,
  read_at: "2026-11-27T10:00:00Z",
};

describe("partitionSummary", () => {
  it("counts the partition's nodes, GPUs per node, types and the free ones", () => {
    expect(partitionSummary(STATE, "gpu")).toBe(
      "2 nodes with 2 to 4 GPUs each (h100, a100) · 4 of 6 GPUs free, at most 3 free on one node",
    );
  });

  it("says so for a partition of CPU nodes, or one Slurm lists no node in", () => {
    expect(partitionSummary(STATE, "cpu")).toBe("1 node with 0 GPUs each · 0 of 0 GPUs free, at most 0 free on one node");
    expect(partitionSummary(STATE, "gone")).toBe("Slurm reports no nodes in partition gone.");
  });
});

describe("clusterProblem", () => {
  const choice = { cluster: "lab", partition: "gpu", count: 4, nodes: null };

  it("accepts what a node of the partition holds, and a count split over nodes", () => {
    expect(clusterProblem(choice, STATE)).toBeNull();
    expect(clusterProblem({ ...choice, nodes: 2 }, STATE)).toBeNull();
  });

  it("names count when no node holds that many, with the nodes that would", () => {
    expect(clusterProblem({ ...choice, count: 6 }, STATE)).toEqual({
      field: "count",
      message: "6 GPUs on one node: partition gpu's nodes have at most 4 each; spread it, e.g. nodes 2",
    });
  });

  it("names nodes for an uneven split, or more nodes than hold the share", () => {
    expect(clusterProblem({ ...choice, count: 3, nodes: 2 }, STATE)?.field).toBe("nodes");
    expect(clusterProblem({ ...choice, count: 6, nodes: 2 }, STATE)).toEqual({
      field: "nodes",
      message: "2 nodes with 3 GPUs each: partition gpu has 1",
    });
  });

  it("leaves the rest to the API while the cluster is silent or the partition unknown", () => {
    const silent = { ...STATE, reachable: false, cause: "timed out", nodes: [] };
    expect(clusterProblem({ ...choice, count: 64 }, silent)).toBeNull();
    expect(clusterProblem({ ...choice, count: 64 }, undefined)).toBeNull();
    expect(clusterProblem({ ...choice, partition: "gone", count: 64 }, STATE)).toBeNull();
  });
});

describe("clusterBody", () => {
  it("sends nodes only when given", () => {
    expect(clusterBody({ cluster: "lab", partition: "gpu", count: 2, nodes: null })).toEqual({
      cluster: "lab",
      partition: "gpu",
      count: 2,
    });
    expect(clusterBody({ cluster: "lab", partition: "gpu", count: 4, nodes: 2 })).toEqual({
      cluster: "lab",
      partition: "gpu",
      count: 4,
      nodes: 2,
    });
  });
});
