import type { Cluster } from "../../client/clusterTypes";

interface Props {
  clusters: Cluster[];
  /** the chosen cluster's name, or null: GPUDeck's own nodes */
  value: string | null;
  onChange: (name: string | null) => void;
  /** the API's word on `cluster` (a 422), if any */
  error?: string;
}

// "" in the select stands for GPUDeck's own nodes (a cluster's name is never empty)
const OWN = "";

/** "Where": GPUDeck's own nodes, or one of the connected Slurm clusters. Shown only when one is connected. */
export function WhereChoice({ clusters, value, onChange, error }: Props) {
  if (clusters.length === 0) return null;
  return (
    <section className="card" data-testid="where">
      <div className="section-head">
        <h2>Where</h2>
      </div>
      <select aria-label="where" value={value ?? OWN} onChange={(e) => onChange(e.target.value === OWN ? null : e.target.value)}>
        <option value={OWN}>GPUDeck&apos;s nodes</option>
        {clusters.map((c) => (
          <option key={c.name} value={c.name}>
            Slurm cluster {c.name}
          </option>
        ))}
      </select>
      {error && (
        <p className="field-error" data-testid="cluster-error">
          {error}
        </p>
      )}
    </section>
  );
}
