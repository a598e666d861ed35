import type { MapProgress } from "../../client/types";
import { formatCompact, formatSeconds } from "../../lib/format";
import { ProgressBar } from "../ProgressBar";

/**
 * A map job's totals (chunks, items, and while it runs its rate and ETA), where its output
 * goes, then one bar per rank: the chunks it finished
 * of its share. Under `dynamic` a rank
 * claims chunks as it goes, so it has no share of its own: its bar is against the chunks left
 * for the run, which all ranks share.
 */
export function RankProgress({ progress, finished = false }: { progress: MapProgress; finished?: boolean }) {
  if (progress.ranks.length === 0) return null;
  const runChunks = progress.num_chunks === null ? null : progress.num_chunks - progress.chunks_done_before;
  return (
    <section className="card" data-testid="rank-progress">
      <h2>
        Ranks <span className="muted small">{progress.strategy ?? ""}</span>
      </h2>
      <p className="small" data-testid="map-total">
        {progress.chunks_done.toLocaleString()} / {progress.num_chunks === null ? "?" : progress.num_chunks.toLocaleString()} chunks ·{" "}
        {progress.items_done.toLocaleString()} items
        {/* an ended job has no rate now and nothing left: not "0.000/s · ETA 0s" */}
        {!finished && ` · ${formatCompact(progress.items_per_s)}/s · ETA ${formatSeconds(progress.eta_s)}`}
      </p>
      {progress.output_dir && (
        <p className="small output-dir" data-testid="map-output">
          output <code>{progress.output_dir}</code>
        </p>
      )}
      {progress.chunks_done_before > 0 && <p className="muted small">{progress.chunks_done_before} chunks written by an earlier run</p>}
      <ul className="rank-progress">
        {progress.ranks.map((r) => (
          <li key={r.rank} data-testid={`rank-${r.rank}`}>
            <span className="mono">rank {r.rank}</span>
            <ProgressBar value={r.chunks_done} total={r.chunks_total ?? runChunks} label={`rank ${r.rank} chunks`} />
            <span className="muted small">
              {r.items_done.toLocaleString()} items · {formatCompact(r.items_per_s)}/s
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}
