import { useEffect, useRef, useState } from "react";
import { isTerminal, type Job } from "../../client/types";
import { useJobLogs } from "../../hooks/queries";

/**
 * A rank's last lines, polled while the job runs; it follows the end (like `tail -f`) unless
 * the reader has scrolled up to read something.
 */
export function LogTail({ job }: { job: Job }) {
  const ranks = Math.max(1, job.world_size);
  const [rank, setRank] = useState(0);
  const live = !isTerminal(job.status);
  const logs = useJobLogs(job.id, rank, 200, live);
  const text = logs.data ?? "";
  const box = useRef<HTMLPreElement>(null);
  const following = useRef(true);
  useEffect(() => {
    const el = box.current;
    if (el && following.current) el.scrollTop = el.scrollHeight;
  }, [text]);
  return (
    <section className="card">
      <div className="section-head">
        <h2>Logs {live && <span className="muted small">following</span>}</h2>
        {ranks > 1 && (
          <div className="segmented small" role="group" aria-label="rank">
            {Array.from({ length: ranks }, (_, r) => (
              <button key={r} type="button" aria-pressed={rank === r} onClick={() => setRank(r)}>
                rank {r}
              </button>
            ))}
          </div>
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
