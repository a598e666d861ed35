/**
 * A job on a Slurm cluster as the new-job form reads it: what the cluster has in the chosen
 * partition (from GET /api/clusters/{name}/state), the fields a submit sends, and what the form
 * can already tell is wrong. Slurm places the job; the API checks the rest (422 by field).
 */
import type { ClusterNode, ClusterState } from "../client/clusterTypes";
import type { JobCreate } from "../client/types";

/** The form's cluster choice: which cluster and partition, how many GPUs, over how many nodes. */
export interface ClusterChoice {
  cluster: string;
  partition: string;
  count: number;
  /** exactly this many nodes (Slurm's --nodes), or null: Slurm's default, one */
  nodes: number | null;
}

/** The POST /api/jobs fields that send a job to a cluster: never devices or node. */
export function clusterBody({
  cluster,
  partition,
  count,
  nodes,
}: ClusterChoice): Pick<JobCreate, "cluster" | "partition" | "count" | "nodes"> {
  return { cluster, partition, count, ...(nodes !== null ? { nodes } : {}) };
}

const gpusOf = (node: ClusterNode): number => node.gpus.reduce((sum, g) => sum + g.count, 0);
const freeOf = (node: ClusterNode): number => node.gpus.reduce((sum, g) => sum + Math.max(0, g.count - g.used), 0);
const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;

/** The partition's nodes as Slurm reported them. */
export function partitionNodes(state: ClusterState, partition: string): ClusterNode[] {
  return state.nodes.filter((n) => n.partitions.includes(partition));
}

/**
 * What the partition has, in one line: "2 nodes with 2 GPUs each (h100) · 3 of 4 GPUs free,
 * at most 2 free on one node".
 */
export function partitionSummary(state: ClusterState, partition: string): string {
  const nodes = partitionNodes(state, partition);
  if (nodes.length === 0) return `Slurm reports no nodes in partition ${partition}.`;
  const counts = nodes.map(gpusOf);
  const least = Math.min(...counts);
  const most = Math.max(...counts);
  const each = least === most ? `${plural(most, "GPU")} each` : `${least} to ${most} GPUs each`;
  const types = [...new Set(nodes.flatMap((n) => n.gpus.map((g) => g.type).filter((t): t is string => Boolean(t))))];
  const typed = types.length > 0 ? ` (${types.join(", ")})` : "";
  const total = counts.reduce((a, b) => a + b, 0);
  const free = nodes.reduce((a, n) => a + freeOf(n), 0);
  const freeOnOne = Math.max(...nodes.map(freeOf));
  return `${plural(nodes.length, "node")} with ${each}${typed} · ${free} of ${total} GPUs free, at most ${freeOnOne} free on one node`;
}

/**
 * What the form can tell about the choice before it is sent, or null: a count that does not
 * split over the nodes, or (once the cluster has answered) more GPUs on one node, or more
 * nodes, than the partition has. The API says the same, by field.
 */
export function clusterProblem(
  choice: ClusterChoice,
  state: ClusterState | undefined,
): { field: "count" | "nodes"; message: string } | null {
  const nodes = choice.nodes ?? 1;
  if (choice.count % nodes !== 0) return { field: "nodes", message: `${choice.count} GPUs do not split evenly over ${nodes} nodes` };
  if (!state?.reachable) return null;
  const members = partitionNodes(state, choice.partition);
  if (members.length === 0) return null; // the API names the partition
  const perNode = choice.count / nodes;
  const most = Math.max(...members.map(gpusOf));
  if (perNode > most) {
    const spread = most > 0 ? `; spread it, e.g. nodes ${Math.ceil(choice.count / most)}` : "";
    return {
      field: "count",
      message: `${perNode} GPUs on one node: partition ${choice.partition}'s nodes have at most ${most} each${spread}`,
    };
  }
  const able = members.filter((n) => gpusOf(n) >= perNode).length;
  if (nodes > able)
    return { field: "nodes", message: `${nodes} nodes with ${perNode} GPUs each: partition ${choice.partition} has ${able}` };
  return null;
}
