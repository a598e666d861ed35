import { useState } from "react";
import { downloadFile, getAuthToken } from "../../client/api";
import type { CheckpointFile, Job } from "../../client/types";
import { useCheckpoints } from "../../hooks/queries";
import { isTerminal } from "../../client/types";
import { formatAge, formatBytes, formatCompact } from "../../lib/format";

function CheckpointLink({ file }: { file: CheckpointFile }) {
  const [error, setError] = useState<string | null>(null);
  const url = file.url;
  if (url === null) {
    // On another node's disk: listed with the size that node reported, not offered as a link.
    return (
      <span className="file-link elsewhere" title={formatBytes(file.size_bytes)}>
        {file.name}
      </span>
    );
  }
  return (
    <a
      className="file-link"
      href={url}
      download={file.name}
      title={error ?? formatBytes(file.size_bytes)}
      onClick={(event) => {
        if (!getAuthToken()) return; // a plain download works without a token
        event.preventDefault();
        downloadFile(url, file.name).catch((e: Error) => setError(e.message));
      }}
    >
      {file.name}
      {error && <span className="field-error"> ({error})</span>}
    </a>
  );
}

/**
 * What an empty list means: a map job's chunks are its progress; other jobs say their interval,
 * or, where the run is no longer than it (400 steps at every 500), that the one checkpoint
 * comes at the end.
 */
export function noneYet(job: Job, resumesFromOutput: boolean): string {
  if (resumesFromOutput) return "None: a map job's output chunks are its checkpoints; a resumed job skips the chunks written.";
  const interval = job.config["checkpoint_interval"];
  if (typeof interval !== "number") return "None yet.";
  const steps = job.progress.total ?? job.config["steps"];
  if (typeof steps === "number" && steps > 0 && interval >= steps) {
    const n = (v: number) => v.toLocaleString("en-US");
    return `None yet: the run (${n(steps)} steps) is not longer than the interval (every ${n(interval)}), so rank 0 writes one checkpoint, the final one, at step ${n(steps)}.`;
  }
  return `None yet: rank 0 writes one every ${interval.toLocaleString("en-US")} steps.`;
}

export function Checkpoints({ job, resumesFromOutput = false }: { job: Job; resumesFromOutput?: boolean }) {
  const checkpoints = useCheckpoints(job.id, !isTerminal(job.status));
  const items = checkpoints.data ?? [];
  // a kind that reports no loss (an evaluation) gets no column of dashes
  const hasLoss = items.some((c) => c.loss != null);
  return (
    <section className="card">
      <h2>Checkpoints</h2>
      {items.length === 0 ? (
        <p className="muted">{noneYet(job, resumesFromOutput)}</p>
      ) : (
        <table className="checkpoints" data-testid="checkpoints">
          <thead>
            <tr>
              <th>step</th>
              {hasLoss && <th>loss</th>}
              <th>files</th>
              <th>written</th>
            </tr>
          </thead>
          <tbody>
            {[...items]
              .sort((a, b) => b.step - a.step)
              .map((c) => (
                <tr key={c.step}>
                  <td className="mono">{c.step}</td>
                  {hasLoss && <td className="mono">{formatCompact(c.loss ?? null)}</td>}
                  <td>
                    {c.files.map((f) => (
                      <CheckpointLink key={f.name} file={f} />
                    ))}
                    <span className="muted small">{formatBytes(c.size_bytes)}</span>
                    {c.location && (
                      <div className="muted small" data-testid="checkpoint-location">
                        on node {c.node}'s disk, not this server's: copy it from <code className="mono">{c.location}</code>
                      </div>
                    )}
                  </td>
                  <td>{formatAge(c.created_at)} ago</td>
                </tr>
              ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
