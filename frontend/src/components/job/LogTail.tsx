import { useEffect, useRef, useState } from "react";
import { isTerminal, type Job } from "../../client/types";
import { useJobLogs } from "../../hooks/queries";
import { nodeOfRank, ranksPerNode } from "../../lib/ranks";
import { asTerminalShows } from "../../lib/terminal";

/**
 * A rank's last lines, polled while the job runs; it follows the end (like `tail -f`) unless
 * the reader has scrolled up to read something. A job across nodes lists its ranks under the
 * node each runs on; the API serves every rank's output, wherever it ran. Carriage returns
 * overwrite the line, as a terminal shows them.
 */
export function LogTail({ job }: { job: Job }) {
  const ranks = Math.max(1, job.world_size);
  // A failed job opens the log of the rank whose failure ended it, not rank 0's (which often
  // says only that a peer went away).
  const [rank, setRank] = useState(job.failed_rank ?? 0);
  const live = !isTerminal(job.status);
  const logs = useJobLogs(job.id, rank, 200, live);
  // tqdm's carriage-return updates collapse to the bar's last state, as in a terminal
  const text = asTerminalShows(logs.data ?? "");
  const box = useRef<HTMLPreElement>(null);
  const following = useRef(true);
  const nodes = ranksPerNode(job.devices);
  const acrossNodes = nodes.length > 1;
  useEffect(() => {
    const el = box.current;
    if (el && following.current) el.scrollTop = el.scrollHeight;
  }, [text]);
  const rankButton = (r: number) => (
    <button key={r} type="button" aria-pressed={rank === r} onClick={() => setRank(r)}>
      rank {r}
    </button>
  );
  return (
    <section className="card">
      <div className="section-head">
        <h2>
          Logs{" "}
          {acrossNodes && (
            <span className="muted small" data-testid="log-source">
              rank {rank} on {nodeOfRank(job.devices, rank) ?? "?"}
            </span>
          )}{" "}
          {live && <span className="muted small">following</span>}
        </h2>
        {acrossNodes ? (
          <div className="log-nodes" role="group" aria-label="rank by node">
            {nodes.map(([node, nodeRanks]) => (
              <div key={node} className="log-node" data-testid={`log-node-${node}`}>
                <span className="muted small mono">{node}</span>
                <div className="segmented small" role="group" aria-label={`ranks on ${node}`}>
                  {nodeRanks.map(rankButton)}
                </div>
              </div>
            ))}
          </div>
        ) : (
          ranks > 1 && (
            <div className="segmented small" role="group" aria-label="rank">
              {Array.from({ length: ranks }, (_, r) => rankButton(r))}
            </div>
          )
        )}
      </div>
      <pre
        className="log"
        data-testid="log-tail"
        ref={box}
        onScroll={(e) => {
          const el = e.currentTarget;
          following.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {text.trim() === "" ? <span className="muted">{logs.error ? logs.error.message : "no output yet"}</span> : text}
      </pre>
    </section>
  );
}
