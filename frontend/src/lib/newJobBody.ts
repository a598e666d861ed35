import type { Gpu, JobCreate, JobKind, KindConfig, SchedulingCreate } from "../client/types";
import { clusterBody, type ClusterChoice } from "./clusterPlacement";

export interface NewJobInput {
  kind: JobKind;
  config: KindConfig;
  /** the ticked devices: the job runs on exactly these */
  devices: readonly Pick<Gpu, "node" | "uuid">[];
  /** how many devices, when none is ticked */
  count: number;
  /** the nodes a count is spread over, or null */
  nodes: number | null;
  /** as typed: blank leaves the job unnamed */
  name: string;
  scheduling: SchedulingCreate;
  /** the Slurm cluster it runs on (its count and nodes replace the devices'), or null/absent */
  cluster?: ClusterChoice | null;
  /** share each device by memory (docs/sharing.md); never on a cluster */
  share?: boolean;
}

/**
 * The POST /api/jobs body for what the form shows (a sweep posts it as its `job`): the ticked
 * devices when there are any, else the count (and its nodes); on a Slurm cluster its name,
 * partition, count and nodes instead; the name trimmed, left out when blank; the Scheduling
 * section's fields; share "memory" when the job shares its devices.
 */
export function newJobBody({ kind, config, devices, count, nodes, name, scheduling, cluster, share }: NewJobInput): JobCreate {
  const placement = cluster
    ? clusterBody(cluster)
    : devices.length > 0
      ? { devices: devices.map((d) => ({ node: d.node, uuid: d.uuid })) }
      : { count, ...(nodes !== null ? { nodes } : {}) };
  const sharing = share && !cluster ? { share: "memory" as const } : {};
  return { kind, config, ...placement, ...sharing, ...(name.trim() ? { name: name.trim() } : {}), ...scheduling };
}
