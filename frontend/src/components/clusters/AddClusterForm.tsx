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
  { key: "slurm_conf", label: "slurm.conf", hint: "SLURM_CONF where the commands run (optional)" },
] as const;
/** With access "ssh": the login node Slurm's commands run on, and how GPUDeck signs in. */
const SSH_FIELDS = [
  { key: "ssh_host", label: "login node", hint: "user@host that runs sbatch, squeue, sacct, scontrol" },
  { key: "ssh_port", label: "SSH port", hint: "default 22" },
  { key: "ssh_key_path", label: "SSH key", hint: "a private key file on the API's host, mode 600" },
  { key: "known_hosts_path", label: "known_hosts", hint: "a file on the API's host holding the login node's host key" },
] as const;
type Key = (typeof FIELDS)[number]["key"] | (typeof SSH_FIELDS)[number]["key"];
type Access = "local" | "ssh";
const EMPTY: Record<Key, string> = {
  name: "",
  partitions: "",
  shared_dir: "",
  account: "",
  qos: "",
  slurm_conf: "",
  ssh_host: "",
  ssh_port: "",
  ssh_key_path: "",
  known_hosts_path: "",
};

function bodyOf(values: Record<Key, string>, access: Access): ClusterCreate {
  const optional = (value: string) => (value.trim() === "" ? null : value.trim());
  const base: ClusterCreate = {
    name: values.name.trim(),
    kind: "slurm",
    partitions: values.partitions
      .split(",")
      .map((p) => p.trim())
      .filter((p) => p !== ""),
    shared_dir: values.shared_dir.trim(),
    account: optional(values.account),
    qos: optional(values.qos),
    access,
    slurm_conf: optional(values.slurm_conf),
  };
  if (access === "local") return base;
  const port = values.ssh_port.trim();
  return {
    ...base,
    ssh_host: optional(values.ssh_host),
    ssh_port: port === "" ? 22 : Number(port),
    ssh_key_path: optional(values.ssh_key_path),
    known_hosts_path: optional(values.known_hosts_path),
  };
}

/** Which form field an API error belongs to: `partitions.1` is the partitions box. */
function fieldOf(path: string): Key | null {
  const head = path.split(".")[0];
  return head !== undefined && head in EMPTY ? (head as Key) : null;
}

/** An admin connects a Slurm cluster whose commands run on the API's host, or on a login node over SSH (docs/slurm.md). */
export function AddClusterForm() {
  const add = useAddCluster();
  const [values, setValues] = useState<Record<Key, string>>(EMPTY);
  const [access, setAccess] = useState<Access>("local");
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
    add.mutate(bodyOf(values, access), {
      onSuccess: (cluster) => {
        setAdded(cluster);
        setValues(EMPTY);
      },
    });
  };
  return (
    <form className="card" onSubmit={submit} aria-label="connect a Slurm cluster">
      <h2>Connect a Slurm cluster</h2>
      <div className="field">
        <label htmlFor="cluster-access">access</label>
        <select id="cluster-access" value={access} onChange={(e) => setAccess(e.target.value as Access)}>
          <option value="local">local: the API's host is a submit host</option>
          <option value="ssh">ssh: a login node runs Slurm's commands</option>
        </select>
        {access === "ssh" && (
          <span className="field-hint muted">
            Jobs' files are read from the shared directory at the same path on the API's host: mount it there.
          </span>
        )}
      </div>
      <div className="field-grid">
        {[...FIELDS, ...(access === "ssh" ? SSH_FIELDS : [])].map((f) => (
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
