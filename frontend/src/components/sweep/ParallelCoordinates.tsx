/**
 * Parallel coordinates: one axis per numeric swept parameter and one for the metric, one line
 * per member (the better its metric, the stronger its colour; running members dashed). Read
 * across: lines that stay high from a parameter to the metric say "more of it helps".
 */
import { useMemo } from "react";
import type { SweepMember } from "../../client/sweepTypes";
import { parallelCoordinates } from "../../lib/sweep/parallel";
import { tickText } from "../../lib/sweep/scale";

interface Props {
  members: readonly SweepMember[];
  paths: readonly string[];
  metric: { name: string; label: string; better: "min" | "max" };
}

const HEIGHT = 240;
const PAD = { top: 34, bottom: 30, side: 90 };
const AXIS_GAP = 240;

export function ParallelCoordinates({ members, paths, metric }: Props) {
  const { axes, lines } = useMemo(() => parallelCoordinates(members, paths, metric), [members, paths, metric]);
  if (axes.length < 2) return null; // no numeric parameter: nothing to draw across
  const width = PAD.side * 2 + AXIS_GAP * (axes.length - 1);
  const x = (i: number) => PAD.side + i * AXIS_GAP;
  const y = (at: number) => PAD.top + (1 - at) * (HEIGHT - PAD.top - PAD.bottom);
  return (
    <div className="parallel-coordinates" data-testid="parallel-coordinates">
      <h3 className="small">Parallel coordinates</h3>
      <p className="muted small">
        One line per member through its settings to its {metric.label}: the better its figure, the stronger its line; running members
        dashed.
      </p>
      <svg
        width={width}
        height={HEIGHT}
        role="img"
        aria-label={`parallel coordinates: ${axes.map((a) => a.label).join(", ")}; ${lines.length} members`}
      >
        {lines.map((line) => (
          <polyline
            key={line.jobId}
            data-testid="parallel-line"
            data-job-id={line.jobId}
            points={line.at.map((at, i) => `${x(i)},${y(at)}`).join(" ")}
            stroke="var(--accent)"
            strokeOpacity={0.25 + 0.75 * line.quality}
            strokeDasharray={line.running ? "4 3" : undefined}
          >
            <title>
              {line.label}
              {line.running ? " (running)" : ""}
            </title>
          </polyline>
        ))}
        {axes.map((axis, i) => (
          <g key={axis.key} data-testid="parallel-axis" data-log={axis.log || undefined}>
            <line x1={x(i)} x2={x(i)} y1={PAD.top} y2={HEIGHT - PAD.bottom} stroke="var(--border)" strokeWidth={2} />
            <text x={x(i)} y={14} textAnchor="middle" fontSize={12} fill="currentColor">
              {axis.label}
              {axis.log ? " (log)" : ""}
            </text>
            <text x={x(i)} y={PAD.top - 6} textAnchor="middle" fontSize={10} fill="var(--muted)">
              {tickText(axis.max)}
            </text>
            <text x={x(i)} y={HEIGHT - PAD.bottom + 14} textAnchor="middle" fontSize={10} fill="var(--muted)">
              {tickText(axis.min)}
            </text>
          </g>
        ))}
      </svg>
    </div>
  );
}
