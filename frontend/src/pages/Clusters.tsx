import { Link } from "react-router-dom";
import type { Cluster, ClusterNode } from "../client/clusterTypes";
import { ConfirmButton } from "../components/ConfirmButton";
import { AddClusterForm } from "../components/clusters/AddClusterForm";
import { PageHeader } from "../components/PageHeader";
import { useClusters, useClusterState, useMe, useRemoveCluster } from "../hooks/useClusters";

/** "h100: 2 of 4 in use (0, 1)", one line per GRES type; "no GPUs" for a CPU node. */
function GpuCell({ node }: { node: ClusterNode }) {
  if (node.gpus.length === 0) return <span className="muted">no GPUs</span>;
  return (
    <>
      {node.gpus.map((g) => (
        <div key={g.type ?? "gpu"} data-testid="gres" data-type={g.type ?? ""} data-used={g.used} data-count={g.count}>
          {g.type ?? "gpu"}: {g.used} of {g.count} in use
          {g.used_indices.length > 0 && <span className="muted"> ({g.used_indices.join(", ")})</span>}
        </div>
      ))}
    </>
  );
}

/** GPUDeck's jobs on the node (Slurm may run others: the GPUs in use say so). */
function JobsCell({ node }: { node: ClusterNode }) {
  const jobs = node.jobs ?? [];
  if (jobs.length === 0) return <span className="muted">none of GPUDeck's</span>;
  return (
    <>
      {jobs.map((j) => (
        <div key={j.job_id} data-testid="node-job">
          <Link to={`/jobs/${j.job_id}`}>
            #{j.job_id} {j.name}
          </Link>{" "}
          <span className="muted small">
            {j.owner} · {j.gpus_per_node} GPU{j.gpus_per_node === 1 ? "" : "s"} · Slurm {j.slurm_job_id}
          </span>
        </div>
      ))}
    </>
  );
}

function Nodes({ name }: { name: string }) {
  const state = useClusterState(name);
  if (state.isPending) return <div className="muted">Asking Slurm…</div>;
  if (state.error) return <div className="banner error">{state.error.message}</div>;
  if (!state.data.reachable) {
    return (
      <div className="banner warn" data-testid="unreachable">
        Unreachable: {state.data.cause}
      </div>
    );
  }
  const gpus = state.data.nodes.flatMap((n) => n.gpus);
  const used = gpus.reduce((a, g) => a + g.used, 0);
  const total = gpus.reduce((a, g) => a + g.count, 0);
  return (
    <>
      <div className="muted small" data-testid="gpu-summary">
        {state.data.nodes.length} nodes · {used} of {total} GPUs in use
      </div>
      <table data-testid="cluster-nodes">
        <thead>
          <tr>
            <th>node</th>
            <th>state</th>
            <th>partitions</th>
            <th>GPUs (GRES)</th>
            <th>GPUDeck jobs</th>
            <th className="opt">CPUs</th>
            <th className="opt">memory</th>
          </tr>
        </thead>
        <tbody>
          {state.data.nodes.map((n) => (
            <tr key={n.name} data-node={n.name}>
              <td>{n.name}</td>
              <td>{n.state}</td>
              <td>{n.partitions.join(", ")}</td>
              <td>
                <GpuCell node={n} />
              </td>
              <td>
                <JobsCell node={n} />
              </td>
              <td className="opt">
                {n.cpus_allocated} of {n.cpus}
              </td>
              <td className="opt">
                {Math.round(n.memory_allocated_mb / 1024)} of {Math.round(n.memory_mb / 1024)} GiB
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function ClusterCard({ cluster, isAdmin }: { cluster: Cluster; isAdmin: boolean }) {
  const remove = useRemoveCluster();
  return (
    <section className="card" data-testid="cluster" data-cluster={cluster.name} aria-label={`cluster ${cluster.name}`}>
      <div className="page-head">
        <h2>
          {cluster.name} <span className="muted small">{cluster.kind}</span>
        </h2>
        {isAdmin && (
          <ConfirmButton
            label="Remove"
            question={`Disconnect ${cluster.name}?`}
            confirmLabel="Disconnect"
            onConfirm={() => remove.mutate(cluster.name)}
            disabled={remove.isPending}
          />
        )}
      </div>
      <div className="small">
        <span data-testid="access">
          {cluster.access === "ssh"
            ? `over ssh to ${cluster.ssh_host}${cluster.ssh_port && cluster.ssh_port !== 22 ? `:${cluster.ssh_port}` : ""}`
            : "local commands"}
        </span>{" "}
        · partitions {cluster.partitions.join(", ")} · account {cluster.account ?? "—"} · QOS {cluster.qos ?? "—"} · shared{" "}
        <code>{cluster.shared_dir}</code>
      </div>
      {remove.error && <div className="banner error">{remove.error.message}</div>}
      <Nodes name={cluster.name} />
    </section>
  );
}

/** The Slurm clusters jobs may run on, each with its nodes and the GPUs in use; admins connect and remove them. */
export function Clusters() {
  const clusters = useClusters();
  const me = useMe();
  const isAdmin = me.data?.role === "admin";
  return (
    <div className="page">
      <PageHeader title="Clusters" />
      {clusters.error && <div className="banner error">{clusters.error.message}</div>}
      {clusters.data?.length === 0 && (
        <div className="card muted" data-testid="no-clusters">
          No Slurm cluster is connected. {isAdmin ? "Connect one below" : "An admin connects one here"}, or with{" "}
          <code>gpudeck clusters add slurm</code>.
        </div>
      )}
      {clusters.data?.map((c) => (
        <ClusterCard key={c.name} cluster={c} isAdmin={isAdmin} />
      ))}
      {isAdmin && <AddClusterForm />}
    </div>
  );
}
