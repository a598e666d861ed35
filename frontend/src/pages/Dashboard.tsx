import { useState } from "react";
import type { Gpu } from "../client/types";
import { deviceKey } from "../client/types";
import { AggregateView } from "../components/AggregateView";
import { ClusterBoard } from "../components/clusters/ClusterBoard";
import { GpuCard } from "../components/GpuCard";
import { PageHeader } from "../components/PageHeader";
import { useTelemetryContext } from "../hooks/TelemetryContext";
import { useNodes } from "../hooks/queries";
import { useClusters } from "../hooks/useClusters";

type View = "cards" | "aggregate";

function groupByNode(devices: Gpu[]): [string, Gpu[]][] {
  const groups = new Map<string, Gpu[]>();
  for (const d of devices) groups.set(d.node, [...(groups.get(d.node) ?? []), d]);
  return [...groups.entries()];
}

export function Dashboard() {
  const telemetry = useTelemetryContext();
  const { store, version, stale } = telemetry;
  const [view, setView] = useState<View>(() => (localStorage.getItem("gpudeck.view") as View | null) ?? "cards");
  const choose = (next: View) => {
    setView(next);
    localStorage.setItem("gpudeck.view", next);
  };
  const devices = store.devices();
  const groups = groupByNode(devices);
  const nodes = new Map((useNodes().data ?? []).map((n) => [n.name, n]));
  const source = devices[0]?.source;
  // With a Slurm cluster below, GPUDeck's own nodes are named too, so the two read apart.
  const hasClusters = (useClusters().data?.length ?? 0) > 0;
  return (
    <div className="page">
      <PageHeader title="GPUs" status={source && <span className="muted small">{devices.length} devices</span>}>
        <div className="segmented" role="group" aria-label="view">
          <button type="button" aria-pressed={view === "cards"} onClick={() => choose("cards")}>
            per GPU
          </button>
          <button type="button" aria-pressed={view === "aggregate"} onClick={() => choose("aggregate")}>
            aggregated
          </button>
        </div>
      </PageHeader>
      {stale && (
        <div className="banner warn" role="alert" data-testid="stale-banner">
          The telemetry feed is behind: the numbers below are the last ones received.
        </div>
      )}
      {devices.length === 0 ? (
        <div className="empty card">Waiting for the first telemetry sample…</div>
      ) : view === "aggregate" ? (
        <AggregateView store={store} revision={version} />
      ) : (
        groups.map(([node, members]) => (
          <section key={node} className="node-group" data-testid="node-group">
            {(groups.length > 1 || hasClusters) && (
              <h2 className="node-title">
                {node}
                {nodes.get(node)?.address && <span className="muted small"> {nodes.get(node)?.address}</span>}
                {nodes.has(node) && (
                  <span className={`badge node-health ${nodes.get(node)?.online ? "ok" : "bad"}`} data-testid="node-health">
                    {nodes.get(node)?.online ? "online" : "offline"}
                  </span>
                )}
                {nodes.get(node)?.share_memory && (
                  <span
                    className="badge node-sharing"
                    data-testid="node-sharing"
                    title={
                      nodes.get(node)?.share_across_users ? "any users' jobs may share a device" : "one user's jobs may share a device"
                    }
                  >
                    shares devices by memory
                  </span>
                )}
              </h2>
            )}
            <div className="gpu-grid">
              {members.map((gpu) => (
                <GpuCard key={deviceKey(gpu)} gpu={gpu} series={store.series(deviceKey(gpu))} revision={version} stale={stale} />
              ))}
            </div>
          </section>
        ))
      )}
      <ClusterBoard />
    </div>
  );
}
