import { Link } from "react-router-dom";
import type { Cluster, ClusterNode, ClusterState } from "../../client/clusterTypes";
import { useClusters, useClusterState } from "../../hooks/useClusters";
import { gpuCells, gpusInUse, nodeHolders, nodeLevel, soleHolder, type NodeHolder } from "../../lib/clusterBoard";
import { formatAge } from "../../lib/format";

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function clock(iso: string): string {
  return new Date(iso).toLocaleTimeString();
}

/** "access local" (Slurm's commands run on GPUDeck's host) or "access ssh user@login:port". */
function accessText(cluster: Cluster): string {
  if (cluster.access !== "ssh") return "access local";
  const port = cluster.ssh_port && cluster.ssh_port !== 22 ? `:${cluster.ssh_port}` : "";
  return `access ssh ${cluster.ssh_host ?? "?"}${port}`;
}

function HolderText({ holder }: { holder: NodeHolder }) {
  if (holder.kind === "other") return <span className="muted">other Slurm job</span>;
  return (
    <>
      <Link to={`/jobs/${holder.jobId}`}>{holder.name}</Link>
      <span className="muted"> #{holder.jobId}</span>
    </>
  );
}

function Holders({ node }: { node: ClusterNode }) {
  const holders = nodeHolders(node);
  if (holders.length === 0) return null;
  return (
    <ul className="cluster-holders small" data-testid="cluster-holders">
      {holders.map((h) => (
        <li key={h.kind === "job" ? h.jobId : "other"} data-testid="cluster-holder" data-kind={h.kind}>
          {plural(h.gpus, "GPU")}: <HolderText holder={h} />
          {h.kind === "job" ? (
            <span className="muted">
              {" "}
              · {h.owner} · Slurm {h.slurmJobId}
            </span>
          ) : (
            <span className="muted"> (allocations that are not GPUDeck's)</span>
          )}
        </li>
      ))}
    </ul>
  );
}

function NodeCard({ node }: { node: ClusterNode }) {
  const cells = gpuCells(node);
  const sole = soleHolder(node);
  const total = node.gpus.reduce((sum, g) => sum + g.count, 0);
  return (
    <article className="card cluster-node" data-testid="cluster-node" data-node={node.name}>
      <header className="gpu-card-head">
        <div className="gpu-title">
          <span className="gpu-index">{node.name}</span>
          <span className="gpu-name">
            {node.partitions.join(", ")} · {gpusInUse(node)} of {total} GPUs in use
          </span>
        </div>
        <span className={`badge node-state ${nodeLevel(node.state)}`} data-testid="node-state" title="Slurm's node state">
          {node.state}
        </span>
      </header>
      {cells.length === 0 ? (
        <div className="muted small">no GPUs</div>
      ) : (
        <ul className="cluster-gpus">
          {cells.map((c) => (
            <li
              key={c.key}
              className={`cluster-gpu ${c.inUse ? "in-use" : "free"}`}
              data-testid="cluster-gpu"
              data-in-use={c.inUse}
              title={c.label === (c.type ?? "gpu") ? "Slurm's node view does not say which of this type's GPUs" : undefined}
            >
              <span className="gpu-index">{c.label}</span>
              {c.type && c.label !== c.type && <span className="muted small"> {c.type}</span>}
              <div className="small">{c.inUse ? sole ? <HolderText holder={sole} /> : "in use" : <span className="muted">free</span>}</div>
            </li>
          ))}
        </ul>
      )}
      {!sole && <Holders node={node} />}
    </article>
  );
}

function Reach({ state }: { state: ClusterState }) {
  if (state.reachable) {
    return (
      <span className="muted small" data-testid="cluster-read" title={state.read_at}>
        read {formatAge(state.read_at)} ago
      </span>
    );
  }
  const since = state.unreachable_since ?? state.read_at;
  return (
    <span className="badge node-health bad" data-testid="cluster-unreachable-since" title={state.cause ?? undefined}>
      unreachable since {clock(since)}
    </span>
  );
}

function ClusterGroup({ cluster }: { cluster: Cluster }) {
  const state = useClusterState(cluster.name);
  const data = state.data;
  return (
    <section className="node-group cluster-group" data-testid="cluster-group" data-cluster={cluster.name}>
      <h2 className="node-title">
        {cluster.name} <span className="badge slurm-badge">Slurm cluster</span>{" "}
        <span
          className="muted small"
          data-testid="cluster-access"
          title={cluster.access === "ssh" ? "Slurm's commands run on the login node over ssh" : "Slurm's commands run on GPUDeck's host"}
        >
          {accessText(cluster)}
        </span>
        {data && (
          <>
            <span className="muted small"> · </span>
            <Reach state={data} />
          </>
        )}
      </h2>
      <p className="muted small cluster-note" data-testid="cluster-note">
        Each GPU is in use or free as Slurm allocates it (GRES). Utilization, memory and temperature of cluster GPUs are not measured by
        GPUDeck. <Link to="/clusters">Partitions, CPUs and memory</Link>
      </p>
      {state.isPending && <div className="muted">Asking Slurm…</div>}
      {state.error && <div className="banner error">{state.error.message}</div>}
      {data && !data.reachable && (
        <div className="banner warn" data-testid="cluster-board-unreachable">
          {cluster.access === "ssh" ? "The login node" : "Slurm"} did not answer ({data.cause}).{" "}
          {data.answered_at ? `It last answered at ${clock(data.answered_at)}.` : "It has not answered since GPUDeck began reading it."} Its
          jobs keep their last known state until it answers.
        </div>
      )}
      {data?.reachable && (
        <div className="gpu-grid">
          {data.nodes.map((n) => (
            <NodeCard key={n.name} node={n} />
          ))}
        </div>
      )}
    </section>
  );
}

/** Every connected Slurm cluster as a group of its nodes, re-read with the Clusters page's query (every 10 s). */
export function ClusterBoard() {
  const clusters = useClusters();
  if (!clusters.data?.length) return null;
  return (
    <>
      {clusters.data.map((c) => (
        <ClusterGroup key={c.name} cluster={c} />
      ))}
    </>
  );
}
