import { useState, type FormEvent } from "react";
import { ApiError, fieldErrors } from "../../client/api";
import type { ClusterCreate, ClusterCreated } from "../../client/clusterTypes";
import { useAddCluster } from "../../hooks/useClusters";

const FIELDS = [
  { key: "name", label: "name", hint: "GPUDeck's name for it: lab, hpc-a" },
  { key: "partitions", label: "partitions", hint: "comma-separated: gpu, gpu-long" },
  { key: "shared_dir", label: "shared directory", hint: "shared by the compute nodes: logs and checkpoints" },
  { key: "account", label: "account", hint: "sbatch --account (optional)" },
  { key: "qos", label: "QOS", hint: "sbatch --qos (optional)" },
  { key: "slurm_conf", label: "slurm.conf", hint: "SLURM_CONF on the API's host (optional)" },
] as const;
type Key = (typeof FIELDS)[number]["key"];

function bodyOf(values: Record<Key, string>): ClusterCreate {
  const optional = (value: string) => (value.trim() === "" ? null : value.trim());
  return {
    name: values.name.trim(),
    kind: "slurm",
    partitions: values.partitions
      .split(",")
      .map((p) => p.trim())
      .filter((p) => p !== ""),
    shared_dir: values.shared_dir.trim(),
    account: optional(values.account),
    qos: optional(values.qos),
    access: "local",
    slurm_conf: optional(values.slurm_conf),
  };
}

/** Which form field an API error belongs to: `partitions.1` is the partitions box. */
function fieldOf(path: string): Key | null {
  const head = path.split(".")[0];
  return FIELDS.some((f) => f.key === head) ? (head as Key) : null;
}

/** An admin connects a Slurm cluster whose commands run on the API's host (docs/slurm.md). */
export function AddClusterForm() {
  const add = useAddCluster();
  const [values, setValues] = useState<Record<Key, string>>({
    name: "",
    partitions: "",
    shared_dir: "",
    account: "",
    qos: "",
    slurm_conf: "",
  });
  const [added, setAdded] = useState<ClusterCreated | null>(null);
  const errors: Partial<Record<Key, string>> = {};
  let general: string | null = null;
  if (add.error) {
    const body = add.error instanceof ApiError ? add.error.body : null;
    const byField = fieldErrors(body);
    for (const [path, message] of Object.entries(byField)) {
      const key = fieldOf(path);
      if (key) errors[key] = errors[key] ? `${errors[key]}; ${message}` : message;
      else general = general ? `${general}; ${message}` : message;
    }
    if (Object.keys(byField).length === 0) general = add.error.message;
  }
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setAdded(null);
    add.mutate(bodyOf(values), {
      onSuccess: (cluster) => {
        setAdded(cluster);
        setValues({ name: "", partitions: "", shared_dir: "", account: "", qos: "", slurm_conf: "" });
      },
    });
  };
  return (
    <form className="card" onSubmit={submit} aria-label="connect a Slurm cluster">
      <h2>Connect a Slurm cluster</h2>
      <div className="field-grid">
        {FIELDS.map((f) => (
          <div className="field" key={f.key}>
            <label htmlFor={`cluster-${f.key}`}>{f.label}</label>
            <input
              id={`cluster-${f.key}`}
              value={values[f.key]}
              onChange={(e) => setValues({ ...values, [f.key]: e.target.value })}
              aria-invalid={errors[f.key] ? true : undefined}
            />
            <span className="field-hint muted">{f.hint}</span>
            {errors[f.key] && (
              <span className="field-error" role="alert" data-field={f.key}>
                {errors[f.key]}
              </span>
            )}
          </div>
        ))}
      </div>
      {general && <div className="banner error">{general}</div>}
      {added && (
        <div className={`banner${added.partitions_checked ? "" : " warn"}`} role="status">
          Cluster {added.name} added
          {added.partitions_checked ? ": Slurm knows its partitions." : `; its partitions were not checked: ${added.check_note ?? ""}`}
        </div>
      )}
      <button type="submit" className="button primary" disabled={add.isPending}>
        {add.isPending ? "Checking with Slurm…" : "Connect"}
      </button>
    </form>
  );
}
