import type { MetricPoint } from "../client/types";

export type Bar = { label: string; value: number | null };

/** Each metric's newest value over the points (oldest first): a bar chart shows the latest. */
export function latestValues(points: readonly MetricPoint[]): Record<string, number> {
  const latest: Record<string, number> = {};
  for (const p of points) {
    for (const [name, v] of Object.entries(p.metrics as Record<string, unknown>)) {
      if (typeof v === "number") latest[name] = v;
    }
  }
  return latest;
}

const WIDTH = 480;
const HEIGHT = 180;
const TOP = 14; // room for the value over the tallest bar
const BOTTOM = 22; // room for the labels
const FILL = "#4f7cff";

/**
 * One bar per label, its height its value's share of the largest (a kind's chart of style
 * "bars": an SAE evaluation's feature-density histogram, latents per log10 firing frequency).
 */
export function BarChart({ title, bars, xLabel, testId }: { title: string; bars: readonly Bar[]; xLabel?: string; testId?: string }) {
  const shown = bars.some((b) => b.value !== null);
  const top = Math.max(0, ...bars.map((b) => b.value ?? 0)) || 1;
  const slot = WIDTH / Math.max(1, bars.length);
  const room = HEIGHT - TOP - BOTTOM;
  return (
    <div className="chart" data-testid={testId}>
      <div className="chart-title">{title}</div>
      {shown ? (
        <>
          <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} width="100%" role="img" aria-label={title}>
            {bars.map((b, i) => {
              const h = (room * (b.value ?? 0)) / top;
              const x = i * slot;
              return (
                <g key={b.label} data-testid="bar" data-label={b.label} data-value={b.value ?? ""}>
                  <title>{`${b.label}: ${b.value ?? "—"}`}</title>
                  <rect x={x + slot * 0.1} y={TOP + room - h} width={slot * 0.8} height={h} fill={FILL} />
                  <text x={x + slot / 2} y={TOP + room - h - 3} fontSize={9} textAnchor="middle" fill="currentColor">
                    {b.value ?? ""}
                  </text>
                  <text x={x + slot / 2} y={HEIGHT - 6} fontSize={10} textAnchor="middle" fill="currentColor">
                    {b.label}
                  </text>
                </g>
              );
            })}
          </svg>
          {xLabel && (
            <div className="chart-x-label muted small" data-testid="x-label">
              {xLabel}
            </div>
          )}
        </>
      ) : (
        // in the flow, not over the plot as a line chart's: without bars there is no plot, and
        // the absolute message sat on the title
        <div className="chart-empty in-flow muted small">no data yet</div>
      )}
    </div>
  );
}
