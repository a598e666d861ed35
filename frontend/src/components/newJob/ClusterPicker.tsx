import type { UseQueryResult } from "@tanstack/react-query";
import type { Cluster, ClusterState, GpuTypes } from "../../client/clusterTypes";
import { partitionSummary } from "../../lib/clusterPlacement";
import { GpuTypeTable } from "./GpuTypeTable";

interface Props {
  cluster: Cluster;
  partition: string;
  onPartition: (partition: string) => void;
  count: number;
  onCount: (count: number) => void;
  /** exactly this many nodes, or null (blank): one */
  nodes: number | null;
  onNodes: (nodes: number | null) => void;
  /** the cluster's nodes now (GET /api/clusters/{name}/state) */
  state: UseQueryResult<ClusterState>;
  /** the partition's GPU types against the estimate (GET /api/clusters/{name}/gpu-types) */
  gpuTypes: UseQueryResult<GpuTypes>;
  /** by field (count, nodes, partition): the form's own reading, or the API's 422 */
  errors: Record<string, string>;
}

/** What the cluster has in the partition, or why it cannot be said. */
function ClusterFacts({ state, partition }: { state: UseQueryResult<ClusterState>; partition: string }) {
  if (state.isPending) return <p className="muted small">Asking Slurm what the cluster has…</p>;
  if (state.error) return <p className="banner warn small">cluster state could not be read: {state.error.message}</p>;
  if (!state.data.reachable) {
    return (
      <p className="banner warn small" data-testid="cluster-unreachable">
        cluster did not answer: {state.data.cause}
      </p>
    );
  }
  return (
    <p className="small" data-testid="cluster-facts">
      {partitionSummary(state.data, partition)}
    </p>
  );
}

function FieldError({ field, errors }: { field: string; errors: Record<string, string> }) {
  const message = errors[field];
  return message ? (
    <p className="field-error" data-testid={`${field}-error`}>
      {message}
    </p>
  ) : null;
}

/**
 * The GPUs of a job on a Slurm cluster: how many, over how many nodes, in which partition.
 * Slurm picks the nodes and GPUs; the card says what the cluster has, so the count can be chosen
 * to fit, and which GPU types the memory estimate fits (the one GPUDeck will ask for).
 */
export function ClusterPicker({ cluster, partition, onPartition, count, onCount, nodes, onNodes, state, gpuTypes, errors }: Props) {
  return (
    <section className="card" data-testid="cluster-picker" aria-label={`GPUs on cluster ${cluster.name}`}>
      <div className="section-head">
        <h2>GPUs</h2>
        <span className="muted small">Slurm places the job</span>
      </div>
      <div className="recommend">
        <label>
          count{" "}
          <input
            type="number"
            min={1}
            max={64}
            value={count}
            onChange={(e) => onCount(Math.max(1, Number(e.target.value) || 1))}
            className="narrow"
            aria-label="GPU count"
          />
        </label>
        <label title="exactly this many nodes, the count split evenly over them; blank: one node">
          on{" "}
          <input
            type="number"
            min={1}
            max={64}
            value={nodes ?? ""}
            placeholder="1"
            onChange={(e) => onNodes(e.target.value === "" ? null : Math.max(1, Number(e.target.value) || 1))}
            className="narrow"
            aria-label="nodes"
          />{" "}
          nodes
        </label>
        <label>
          partition{" "}
          <select aria-label="partition" value={partition} onChange={(e) => onPartition(e.target.value)}>
            {cluster.partitions.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </label>
      </div>
      <FieldError field="count" errors={errors} />
      <FieldError field="nodes" errors={errors} />
      <FieldError field="partition" errors={errors} />
      <p className="muted small">
        Slurm chooses the nodes and GPUs on cluster {cluster.name} when the job starts; GPUDeck follows it there.
      </p>
      <ClusterFacts state={state} partition={partition} />
      <GpuTypeTable types={gpuTypes} />
    </section>
  );
}
