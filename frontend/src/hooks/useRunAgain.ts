import { useEffect } from "react";
import { deviceKey, type Job } from "../client/types";

interface Setters {
  setName: (name: string) => void;
  setCount: (count: number) => void;
  setNodes: (nodes: number) => void;
  setSelected: (keys: Set<string>) => void;
  /** run it on the same Slurm cluster, partition and nodes */
  setCluster?: (cluster: string, partition: string | null, nodes: number | null) => void;
}

/**
 * "Run again with these settings" (/new?kind=sae&from=12): once job 12 is in, the form takes
 * its name, its device count (and the nodes a count was spread over) and ticks the devices it
 * ran on (a job on a Slurm cluster: that cluster, partition and nodes); its config is the form's starting values (useJobFormValues). Once per job: what the
 * user changes afterwards stays. (The form once kept only the config: 2 devices came back as
 * 1 and the name was dropped.)
 */
export function useRunAgain(job: Job | undefined, kind: string, { setName, setCount, setNodes, setSelected, setCluster }: Setters): void {
  const source = job && job.kind === kind ? job : undefined;
  useEffect(() => {
    if (!source) return;
    setName(source.name);
    setCount(source.world_size);
    if (source.cluster) {
      const nodes = source.slurm?.nodes_requested ?? null;
      setCluster?.(source.cluster, source.slurm?.partition ?? null, nodes !== null && nodes > 1 ? nodes : null);
      return;
    }
    if (source.nodes) setNodes(source.nodes);
    if (source.devices.length > 0) setSelected(new Set(source.devices.map(deviceKey)));
  }, [source?.id]); // eslint-disable-line react-hooks/exhaustive-deps
}

/** The note above a prefilled form: which job, and what came from it. */
export function runAgainNote(job: Job): string {
  const where = job.cluster
    ? `${job.world_size} GPU(s) on Slurm cluster ${job.cluster}`
    : job.devices.length > 0
      ? `its devices (${job.devices.map((d) => `${d.node}/${d.index}`).join(", ")})`
      : `${job.world_size} device(s)`;
  return `Prefilled from job #${job.id} (${job.name}): its kind, settings, name and ${where}. Change anything before you start it.`;
}
