import { describe, expect, it } from "vitest";
import type { ClusterNode } from "../client/clusterTypes";
import { gpuCells, nodeHolders, nodeLevel, soleHolder } from "./clusterBoard";

const job = (job_id: number, gpus_per_node: number) => ({
  job_id,
  name: `j${job_id}`,
  owner: "ada",
  slurm_job_id: `${job_id}0`,
  gpus_per_node,
});

function node(gpus: ClusterNode["gpus"], jobs: ClusterNode["jobs"] = []): ClusterNode {
  return { name: "g1", state: "mixed", partitions: ["gpu"], cpus: 8, cpus_allocated: 2, memory_mb: 1, memory_allocated_mb: 0, gpus, jobs };
}

describe("a cluster node on the board", () => {
  it("numbers one type's GPUs by Slurm's indices and marks the used ones", () => {
    const cells = gpuCells(node([{ type: "h100", count: 4, used: 2, used_indices: [1, 3] }]));
    expect(cells.map((c) => [c.label, c.inUse])).toEqual([
      ["GPU 0", false],
      ["GPU 1", true],
      ["GPU 2", false],
      ["GPU 3", true],
    ]);
  });

  it("does not invent indices across several types: each type's used GPUs first, unnumbered", () => {
    const cells = gpuCells(
      node([
        { type: "h100", count: 2, used: 1, used_indices: [1] },
        { type: "a100", count: 2, used: 0, used_indices: [] },
      ]),
    );
    expect(cells.map((c) => [c.label, c.inUse])).toEqual([
      ["h100", true],
      ["h100", false],
      ["a100", false],
      ["a100", false],
    ]);
  });

  it("counts GPUDeck's jobs, then the rest in use as other Slurm jobs", () => {
    const n = node([{ type: "h100", count: 4, used: 3, used_indices: [0, 1, 2] }], [job(12, 2)]);
    expect(nodeHolders(n).map((h) => [h.kind, h.gpus])).toEqual([
      ["job", 2],
      ["other", 1],
    ]);
    expect(soleHolder(n)).toBeNull();
  });

  it("names a sole holder: one GPUDeck job, or other Slurm jobs alone", () => {
    const ours = node([{ type: "h100", count: 2, used: 2, used_indices: [0, 1] }], [job(7, 2)]);
    expect(soleHolder(ours)).toMatchObject({ kind: "job", jobId: 7 });
    const theirs = node([{ type: "h100", count: 2, used: 1, used_indices: [0] }]);
    expect(soleHolder(theirs)).toEqual({ kind: "other", gpus: 1 });
    expect(soleHolder(node([{ type: "h100", count: 2, used: 0, used_indices: [] }]))).toBeNull();
  });

  it("reads Slurm's state words for colour", () => {
    expect(["idle", "mixed", "allocated", "down*", "idle+drain", "drained"].map(nodeLevel)).toEqual([
      "free",
      "busy",
      "busy",
      "bad",
      "bad",
      "bad",
    ]);
  });
});
