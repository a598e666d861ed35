import { useMemo } from "react";
import type uPlot from "uplot";
import type { Series } from "../hooks/telemetryStore";
import { TimeSeriesChart } from "./TimeSeriesChart";

const SPECS = [
  { label: "util %", color: "#4f7cff", fill: "rgba(79,124,255,0.12)" },
  { label: "memory %", color: "#1fb57a", fill: "rgba(31,181,122,0.10)" },
];

const orNull = (v: number | undefined): number | null => (v === undefined || Number.isNaN(v) ? null : v);

/**
 * The whole window the ring can hold, always `capacity` points long: the part not filled yet is
 * empty time before the first sample. The chart's arrays so never grow, and its time axis
 * always spans the same stretch.
 */
export function windowData(series: Series | undefined): uPlot.AlignedData {
  const capacity = series?.t.capacity ?? 0;
  const n = series?.t.size ?? 0;
  const x = new Array<number>(capacity);
  const util = new Array<number | null>(capacity);
  const mem = new Array<number | null>(capacity);
  if (!series) return [x, util, mem] as unknown as uPlot.AlignedData;
  const first = series.t.at(0) ?? Date.now() / 1000;
  const last = series.t.last() ?? first;
  const step = n > 1 ? (last - first) / (n - 1) : 1;
  const pad = capacity - n;
  for (let i = 0; i < pad; i += 1) {
    x[i] = first - (pad - i) * step;
    util[i] = null;
    mem[i] = null;
  }
  for (let i = 0; i < n; i += 1) {
    x[pad + i] = series.t.at(i) ?? NaN;
    util[pad + i] = orNull(series.utilPct.at(i));
    mem[pad + i] = orNull(series.memPct.at(i));
  }
  return [x, util, mem] as unknown as uPlot.AlignedData;
}

function span(series: Series | undefined): string {
  const first = series?.t.at(0);
  const last = series?.t.last();
  if (first === undefined || last === undefined) return "—";
  const seconds = Math.round(last - first);
  return seconds < 120 ? `${seconds} s` : `${Math.round(seconds / 60)} min`;
}

/** Utilization and memory (% of total) over the window a Series holds. */
export function SeriesSparkline({ series, revision, height = 56 }: { series: Series | undefined; revision: number; height?: number }) {
  const data = useMemo(
    () => windowData(series),
    // the rings are mutated in place; `revision` says when
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [series, revision],
  );
  return (
    <div className="sparkline">
      <TimeSeriesChart
        compact
        data={data}
        series={SPECS}
        revision={revision}
        height={height}
        yMin={-3}
        yMax={103}
        testId="sparkline"
        points={series?.t.size ?? 0}
        xMin={series?.t.at(0)}
      />
      <div className="sparkline-legend small muted">
        <span className="key util">util</span> <span className="key mem">memory</span> · last {span(series)}
      </div>
    </div>
  );
}
