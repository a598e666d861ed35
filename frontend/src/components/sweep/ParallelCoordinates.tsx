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

const HEIGHT = 220;
const PAD = { top: 22, bottom: 28, side: 50 };
const AXIS_GAP = 150;

export function ParallelCoordinates({ members, paths, metric }: Props) {
  const { axes, lines } = useMemo(() => parallelCoordinates(members, paths, metric), [members, paths, metric]);
  if (axes.length < 2) return null; // no numeric parameter: nothing to draw across
  const width = PAD.side * 2 + AXIS_GAP * (axes.length - 1);
  const x = (i: number) => PAD.side + i * AXIS_GAP;
  const y = (at: number) => PAD.top + (1 - at) * (HEIGHT - PAD.top - PAD.bottom);
  return (
    <div className="parallel-coordinates" data-testid="parallel-coordinates">
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
            strokeOpacity={0.15 + 0.85 * line.quality}
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
            <text x={x(i)} y={12} textAnchor="middle" fontSize={11}>
              {axis.label}
              {axis.log ? " (log)" : ""}
            </text>
            <text x={x(i) + 4} y={PAD.top + 4} fontSize={10} fill="var(--muted)">
              {tickText(axis.max)}
            </text>
            <text x={x(i) + 4} y={HEIGHT - PAD.bottom + 14} fontSize={10} fill="var(--muted)">
              {tickText(axis.min)}
            </text>
          </g>
        ))}
      </svg>
    </div>
  );
}
