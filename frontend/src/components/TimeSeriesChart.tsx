/**
 * A uPlot chart that is created once and fed with setData: cheap enough for many live series
 * at 1 Hz. `revision` tells it new data is there (the arrays may be reused in place).
 */
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export interface SeriesSpec {
  label: string;
  color: string;
  /** fill under the line with this colour */
  fill?: string;
  scale?: string;
  width?: number;
}

interface Props {
  data: uPlot.AlignedData;
  series: SeriesSpec[];
  revision: number;
  height?: number;
  /** x is seconds since the epoch (time) or a plain number (steps) */
  xTime?: boolean;
  compact?: boolean;
  /** fixed y range, e.g. 0..100 for percentages */
  yMin?: number;
  yMax?: number;
  title?: string;
  logY?: boolean;
  testId?: string;
  /** points with data, when the arrays are padded (shown as data-points for tests) */
  points?: number;
  /** start the x axis here (hides padding before the first real point) */
  xMin?: number;
}

function zoom(chart: uPlot, data: uPlot.AlignedData, xMin: number | undefined): void {
  const xs = data[0];
  const last = xs[xs.length - 1];
  if (xMin !== undefined && last !== undefined && last > xMin) chart.setScale("x", { min: xMin, max: last });
}

const powersOfTen = (_u: uPlot, splits: number[]): (number | null)[] =>
  splits.map((v) => (Number.isInteger(Math.round(Math.log10(v) * 1e6) / 1e6) ? v : null));

/**
 * uPlot's points.show for one series over the rows in view: a dot at each value where the
 * series has one value, or values on fewer than half the rows (measured now and then). A
 * series measured at one checkpoint was drawn as nothing: a line needs two points.
 */
export function sparsePoints(u: uPlot, seriesIdx: number, idx0: number, idx1: number): boolean {
  const column = u.data[seriesIdx] ?? [];
  let values = 0;
  for (let i = idx0; i <= idx1; i++) if (column[i] != null) values++;
  return values === 1 || values * 2 < idx1 - idx0 + 1;
}

type Shape = Pick<Props, "series" | "height" | "xTime" | "compact" | "yMin" | "yMax" | "logY">;

function options(shape: Shape, width: number): uPlot.Options {
  const { series, height = 160, xTime = true, compact = false, yMin, yMax, logY = false } = shape;
  const yRange: [number, number] | undefined = yMin !== undefined && yMax !== undefined ? [yMin, yMax] : undefined;
  const axisStroke = "rgba(128,128,128,0.9)";
  const grid = { stroke: "rgba(128,128,128,0.15)", width: 1 };
  return {
    width,
    height,
    legend: { show: !compact },
    cursor: compact ? { show: false } : { drag: { x: true, y: false } },
    scales: {
      x: { time: xTime },
      y: yRange ? { range: yRange } : logY ? { distr: 3 } : {},
    },
    axes: compact
      ? // a sparkline keeps a small % scale (0, 50, 100) so a 1 % line reads as 1 %, not as nothing
        [
          { show: false },
          { stroke: axisStroke, grid, ticks: { show: false }, size: 28, font: "10px system-ui", splits: () => [0, 50, 100], gap: 2 },
        ]
      : [
          { stroke: axisStroke, grid, ticks: grid },
          logY
            ? // on a log scale, label and grid the powers of ten only
              {
                stroke: axisStroke,
                grid: { ...grid, filter: powersOfTen },
                ticks: { ...grid, filter: powersOfTen },
                filter: powersOfTen,
                size: 56,
              }
            : { stroke: axisStroke, grid, ticks: grid, size: 56 },
        ],
    series: [
      { label: xTime ? "time" : "step" },
      ...series.map((s) => ({
        label: s.label,
        stroke: s.color,
        width: s.width ?? (compact ? 1.75 : 1.5),
        scale: s.scale ?? "y",
        ...(s.fill ? { fill: s.fill } : {}),
        // a sparkline draws lines only; a chart marks each value of a sparse series (held-out
        // figures come at checkpoints only), which a line through one value would not show
        points: { show: compact ? false : sparsePoints },
        spanGaps: true,
      })),
    ],
  };
}

export function TimeSeriesChart(props: Props) {
  const { data, revision, series, height, xTime, compact, yMin, yMax, logY, xMin } = props;
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const dataRef = useRef(data);
  const xMinRef = useRef(xMin);

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const width = Math.max(120, el.clientWidth || 300);
    const shape = { series, height, xTime, compact, yMin, yMax, logY };
    const chart = new uPlot(options(shape, width), dataRef.current, el);
    plot.current = chart;
    zoom(chart, dataRef.current, xMinRef.current);
    const observer =
      typeof ResizeObserver !== "undefined"
        ? new ResizeObserver(() => {
            const w = Math.max(120, el.clientWidth);
            if (w !== chart.width) chart.setSize({ width: w, height: chart.height });
          })
        : null;
    observer?.observe(el);
    return () => {
      observer?.disconnect();
      chart.destroy();
      plot.current = null;
    };
  }, [series, height, xTime, compact, yMin, yMax, logY]);

  useEffect(() => {
    dataRef.current = data;
    xMinRef.current = xMin;
    if (!plot.current) return;
    plot.current.setData(data);
    zoom(plot.current, data, xMin);
  }, [data, revision, xMin]);

  const points = props.points ?? data[0]?.length ?? 0;
  return (
    <div className={`chart ${compact ? "compact" : ""}`} data-testid={props.testId}>
      {props.title && <div className="chart-title">{props.title}</div>}
      <div ref={host} className="chart-host" data-points={points} />
      {!compact && points === 0 && <div className="chart-empty muted small">no data yet</div>}
    </div>
  );
}
