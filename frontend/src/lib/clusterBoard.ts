/**
 * What the board shows of a Slurm cluster's node, from Slurm's node view (GRES used/total, the
 * used indices) and GPUDeck's running jobs on it (the executor's last poll). Slurm's node view
 * does not say which job holds which GPU, so holders are counted per node; a GPU names its
 * holder only when one holder accounts for every GPU in use on the node.
 */
import type { ClusterNode } from "../client/clusterTypes";

export interface GpuCell {
  key: string;
  /** "GPU 0" where Slurm's index is known to be this GPU's; else the GRES type alone. */
  label: string;
  type: string | null;
  inUse: boolean;
}

export type NodeHolder =
  { kind: "job"; jobId: number; name: string; owner: string; slurmJobId: string; gpus: number } | { kind: "other"; gpus: number };

export type NodeLevel = "free" | "busy" | "bad";

/**
 * One cell per GPU of the node. With one GRES type, Slurm's indices number exactly its GPUs, so
 * the cells carry them and `used_indices` says which are in use; with several types the indices
 * span all of them in gres.conf's order (not in the node view), so each type's in-use GPUs are
 * drawn first and unnumbered.
 */
export function gpuCells(node: ClusterNode): GpuCell[] {
  const [only, ...rest] = node.gpus;
  if (only && rest.length === 0 && only.used_indices.length === only.used) {
    return Array.from({ length: only.count }, (_, i) => ({
      key: `${only.type ?? "gpu"}-${i}`,
      label: `GPU ${i}`,
      type: only.type,
      inUse: only.used_indices.includes(i),
    }));
  }
  return node.gpus.flatMap((g) =>
    Array.from({ length: g.count }, (_, i) => ({
      key: `${g.type ?? "gpu"}-${i}`,
      label: g.type ?? "gpu",
      type: g.type,
      inUse: i < g.used,
    })),
  );
}

export function gpusInUse(node: ClusterNode): number {
  return node.gpus.reduce((sum, g) => sum + g.used, 0);
}

/** GPUDeck's jobs on the node, then the GPUs in use that none of them accounts for. */
export function nodeHolders(node: ClusterNode): NodeHolder[] {
  const jobs: NodeHolder[] = (node.jobs ?? []).map((j) => ({
    kind: "job",
    jobId: j.job_id,
    name: j.name,
    owner: j.owner,
    slurmJobId: j.slurm_job_id,
    gpus: j.gpus_per_node,
  }));
  const ours = jobs.reduce((sum, h) => sum + h.gpus, 0);
  const other = gpusInUse(node) - ours;
  return other > 0 ? [...jobs, { kind: "other", gpus: other }] : jobs;
}

/** The holder every in-use GPU of the node belongs to, when there is exactly one; else null. */
export function soleHolder(node: ClusterNode): NodeHolder | null {
  const holders = nodeHolders(node);
  const [only] = holders;
  return holders.length === 1 && only && only.gpus === gpusInUse(node) ? only : null;
}

/** Slurm's state word read for colour: down, drain, fail or not responding are bad. */
export function nodeLevel(state: string): NodeLevel {
  if (/down|drain|fail|maint|unknown|not_responding|\*/.test(state)) return "bad";
  if (/alloc|mix|completing/.test(state)) return "busy";
  return "free";
}
