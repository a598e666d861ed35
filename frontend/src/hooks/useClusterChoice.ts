import { useState } from "react";
import type { Cluster } from "../client/clusterTypes";
import type { ClusterChoice } from "../lib/clusterPlacement";
import { useClusterState, useClusters } from "./useClusters";

/**
 * The new-job form's "Where": GPUDeck's own nodes (null, the default) or a connected Slurm
 * cluster, with its partition (default: the cluster's first) and the nodes to span (blank: one).
 * The cluster's nodes are read once it is chosen, and re-read while it stays chosen.
 */
export function useClusterChoice(count: number) {
  const clusters = useClusters();
  const [name, setName] = useState<string | null>(null);
  const [typedPartition, setPartition] = useState<string | null>(null);
  const [nodes, setNodes] = useState<number | null>(null);
  const listed: Cluster[] = clusters.data ?? [];
  const cluster = listed.find((c) => c.name === name) ?? null;
  const state = useClusterState(cluster?.name ?? "", { enabled: cluster !== null });
  const partition =
    typedPartition !== null && cluster?.partitions.includes(typedPartition) ? typedPartition : (cluster?.partitions[0] ?? null);
  const choice: ClusterChoice | null = cluster && partition ? { cluster: cluster.name, partition, count, nodes } : null;
  return {
    /** the connected clusters (none, or not readable: the form offers GPUDeck's nodes only) */
    clusters: listed,
    cluster,
    /** choose a cluster by name, or null for GPUDeck's own nodes */
    choose: (next: string | null) => {
      setName(next);
      setPartition(null);
    },
    /** a run again: the cluster, partition and nodes of the job it repeats */
    prefill: (next: string, partition: string | null, nodesAsked: number | null) => {
      setName(next);
      setPartition(partition);
      setNodes(nodesAsked);
    },
    partition,
    setPartition,
    nodes,
    setNodes,
    state,
    /** what a submit sends, or null on GPUDeck's own nodes */
    choice,
  };
}

export type ClusterChoiceState = ReturnType<typeof useClusterChoice>;
