import type { Job } from "../../client/types";
import { formatAge } from "../../lib/format";

function Fact({ term, children, testId }: { term: string; children: React.ReactNode; testId: string }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd data-testid={testId}>{children}</dd>
    </div>
  );
}

/**
 * A job on a Slurm cluster as the executor's last poll read it: the cluster, Slurm's id and own
 * state word, partition, nodes and attempts; while it waits, Slurm's reason; when Slurm did not
 * answer the poll, that and why (the job's status is then its last known one, not a guess).
 * Nothing for a job on GPUDeck's own nodes.
 */
export function SlurmCard({ job }: { job: Job }) {
  if (!job.cluster) return null;
  const slurm = job.slurm ?? null;
  const nodes = slurm?.nodes ?? (slurm?.nodes_requested ? `${slurm.nodes_requested} requested` : "—");
  return (
    <section className="card" data-testid="slurm-card" aria-label="Slurm">
      <div className="section-head">
        <h2>Slurm</h2>
        {slurm?.polled_at && (
          <span className="muted small" title={slurm.polled_at}>
            read {formatAge(slurm.polled_at)} ago
          </span>
        )}
      </div>
      {slurm?.unknown && (
        <p className="banner warn" data-testid="slurm-unknown">
          Slurm did not answer ({slurm.reason ?? "no cause given"}); the state below is its last answer.
        </p>
      )}
      <dl className="facts">
        <Fact term="cluster" testId="slurm-cluster">
          {job.cluster}
        </Fact>
        <Fact term="Slurm job id" testId="slurm-job-id">
          {job.slurm_job_id ?? <span className="muted">not submitted yet</span>}
        </Fact>
        <Fact term="Slurm state" testId="slurm-state">
          {slurm?.state ?? "—"}
        </Fact>
        <Fact term="partition" testId="slurm-partition">
          {slurm?.partition ?? "—"}
        </Fact>
        <Fact term="nodes" testId="slurm-nodes">
          {nodes}
        </Fact>
        <Fact term="attempts" testId="slurm-attempts">
          {slurm?.attempts ?? 0}
        </Fact>
        {job.status === "queued" && !slurm?.unknown && slurm?.reason && (
          <Fact term="waits because" testId="slurm-reason">
            {slurm.reason}
            {slurm.reason_code && <span className="muted small"> ({slurm.reason_code})</span>}
          </Fact>
        )}
      </dl>
    </section>
  );
}
