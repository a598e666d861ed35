import { formatBytes, loadLevel } from "../lib/format";

interface Props {
  /** null: no reading yet */
  usedBytes: number | null;
  totalBytes: number;
  /** memory a planned job would add, drawn hatched after the used part */
  plannedBytes?: number;
  compact?: boolean;
  /** what the used figure is where it is not a reading (a simulated device: its job's CUDA estimate) */
  what?: string;
}

/** Used of total, coloured by load (green / amber / red). */
export function MemoryBar({ usedBytes, totalBytes, plannedBytes = 0, compact = false, what }: Props) {
  const fraction = totalBytes > 0 && usedBytes !== null ? usedBytes / totalBytes : 0;
  const planned = totalBytes > 0 ? Math.min(1 - Math.min(1, fraction), plannedBytes / totalBytes) : 0;
  const level = loadLevel(fraction);
  return (
    <div className={`membar ${compact ? "compact" : ""}`} data-level={level}>
      <div
        className="membar-track"
        role="meter"
        aria-label="memory used"
        aria-valuemin={0}
        aria-valuemax={totalBytes}
        aria-valuenow={usedBytes ?? undefined}
      >
        <div className={`membar-used level-${level}`} style={{ width: `${Math.min(1, fraction) * 100}%` }} />
        {planned > 0 && <div className="membar-planned" style={{ width: `${planned * 100}%` }} />}
      </div>
      {!compact && (
        <div className="membar-label">
          <span data-testid="mem-used">{formatBytes(usedBytes)}</span> of {formatBytes(totalBytes)}
          {usedBytes !== null && <span className="muted"> · {Math.round(fraction * 100)}%</span>}
          {what && (
            <span className="muted small" data-testid="mem-what">
              {" "}
              ({what})
            </span>
          )}
        </div>
      )}
    </div>
  );
}
