import type { Estimate } from "../client/types";
import { formatBytes } from "../lib/format";
import { ESTIMATE_LABEL } from "./MemoryFigures";

const COLORS = ["#4f7cff", "#1fb57a", "#f2a93b", "#e0567a", "#9b6bff", "#38b6c9", "#8a8f98"];

function label(name: string): string {
  return name.replace(/_bytes$/, "").replace(/_/g, " ");
}

/** The estimate per device and what it is made of, as a stacked bar and a table. */
export function MemoryBreakdown({ estimate, freeBytes }: { estimate: Estimate; freeBytes?: number | null }) {
  const parts = estimate.breakdown.filter((part) => part.bytes > 0).sort((a, b) => b.bytes - a.bytes);
  const total = estimate.bytes_per_device;
  const sum = Math.max(
    1,
    parts.reduce((s, p) => s + p.bytes, 0),
  );
  return (
    <div className="breakdown" data-testid="estimate">
      <div className="breakdown-total">
        <span className="big" data-testid="estimate-bytes">
          {formatBytes(total)}
        </span>
        <span className="muted"> per device ({estimate.device_type === "cuda" ? ESTIMATE_LABEL : estimate.device_type})</span>
        {freeBytes !== undefined && freeBytes !== null && (
          <span className={freeBytes >= total ? "ok" : "bad"}> · {formatBytes(freeBytes)} free on the smallest selected</span>
        )}
      </div>
      <div className="stack" aria-hidden>
        {parts.map((part, i) => (
          <div
            key={part.name}
            style={{ width: `${(100 * part.bytes) / sum}%`, background: COLORS[i % COLORS.length] }}
            title={`${label(part.name)}: ${formatBytes(part.bytes)}`}
          />
        ))}
      </div>
      <table className="breakdown-table">
        <tbody>
          {parts.map((part, i) => (
            <tr key={part.name} title={part.note}>
              <td>
                <span className="swatch" style={{ background: COLORS[i % COLORS.length] }} />
                {label(part.name)}
                {part.note && <span className="muted small"> · {part.note}</span>}
              </td>
              <td className="num">{formatBytes(part.bytes)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <details className="muted small method">
        <summary>
          {estimate.world_size} rank{estimate.world_size === 1 ? "" : "s"} × {estimate.per_rank_batch} per rank · {estimate.dtype} on{" "}
          {estimate.device_type} · how
        </summary>
        {estimate.method}
      </details>
    </div>
  );
}
