/**
 * Two summary metrics of a sweep's members on one canvas, the Pareto frontier drawn through the
 * members on it (highlighted). One canvas and one set of listeners for any number of members:
 * hovering names the nearest point, clicking it opens that member's job. A member stopped before
 * its last step is drawn hollow, one still running as a hollow square at its newest figures (a
 * legend says so); a marked point (the frontier's knee, the best member) is ringed. Its draw time is kept as data-draw-ms and as
 * the performance measure "sweep-scatter-draw".
 */
import { useEffect, useMemo, useRef, useState } from "react";
import { Link } from "react-router-dom";
import { axisOf, logAxisOf, tickText, toPixel, type Axis } from "../../lib/sweep/scale";

export interface ScatterPoint {
  jobId: number;
  x: number;
  y: number;
  /** "#3 k=8" */
  label: string;
  /** ended before its last step (early stopping, a cancel, its time limit): drawn hollow */
  stopped?: boolean;
  /** still running: placed at its newest figures, drawn as a hollow square, off the frontier */
  running?: boolean;
}

interface Props {
  points: ScatterPoint[];
  /** indices into points, along the frontier */
  frontier: number[];
  xLabel: string;
  yLabel: string;
  onOpen: (jobId: number) => void;
  /** a frontier member's figures, beside its link */
  describe: (point: ScatterPoint) => string;
  height?: number;
  /** the x axis on a log scale (values spanning decades: a learning rate) */
  xLog?: boolean;
  /** an index into points ringed and named beside the chart (the knee, the best member) */
  marked?: { index: number; label: string } | null;
}

const MARGIN = { left: 58, right: 14, top: 12, bottom: 38 };
const HIT_PX = 8;

interface Frame {
  width: number;
  height: number;
  x: Axis;
  y: Axis;
  px: (v: number) => number;
  py: (v: number) => number;
}

export function frameOf(points: ScatterPoint[], width: number, height: number, xLog = false): Frame {
  const x = xLog ? logAxisOf(points.map((p) => p.x)) : axisOf(points.map((p) => p.x));
  const y = axisOf(points.map((p) => p.y));
  return {
    width,
    height,
    x,
    y,
    px: (v) => toPixel(x, v, MARGIN.left, width - MARGIN.right),
    py: (v) => toPixel(y, v, height - MARGIN.bottom, MARGIN.top),
  };
}

function colors(el: Element) {
  const style = getComputedStyle(el);
  const read = (name: string, fallback: string) => style.getPropertyValue(name).trim() || fallback;
  return { accent: read("--accent", "#4f7cff"), muted: read("--muted", "#6b7280"), border: read("--border", "#e1e4ea") };
}

function drawAxes(ctx: CanvasRenderingContext2D, f: Frame, c: ReturnType<typeof colors>, labels: [string, string]) {
  ctx.strokeStyle = c.border;
  ctx.fillStyle = c.muted;
  ctx.lineWidth = 1;
  ctx.font = "11px system-ui, sans-serif";
  ctx.beginPath();
  for (const t of f.x.ticks) {
    const x = Math.round(f.px(t)) + 0.5;
    ctx.moveTo(x, MARGIN.top);
    ctx.lineTo(x, f.height - MARGIN.bottom);
  }
  for (const t of f.y.ticks) {
    const y = Math.round(f.py(t)) + 0.5;
    ctx.moveTo(MARGIN.left, y);
    ctx.lineTo(f.width - MARGIN.right, y);
  }
  ctx.stroke();
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const t of f.x.ticks) ctx.fillText(tickText(t), f.px(t), f.height - MARGIN.bottom + 4);
  ctx.fillText(labels[0], (MARGIN.left + f.width - MARGIN.right) / 2, f.height - 16);
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const t of f.y.ticks) ctx.fillText(tickText(t), MARGIN.left - 6, f.py(t));
  ctx.save();
  ctx.translate(12, (MARGIN.top + f.height - MARGIN.bottom) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = "center";
  ctx.fillText(labels[1], 0, 0);
  ctx.restore();
}

function draw(
  canvas: HTMLCanvasElement,
  f: Frame,
  points: ScatterPoint[],
  frontier: number[],
  labels: [string, string],
  marked: number | null,
): void {
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(f.width * ratio);
  canvas.height = Math.round(f.height * ratio);
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, f.width, f.height);
  const c = colors(canvas);
  drawAxes(ctx, f, c, labels);
  // every member that finished: one path, one fill; every one stopped early: one hollow path
  const dots = (stopped: boolean, r: number) => {
    ctx.beginPath();
    for (const p of points) {
      if (Boolean(p.stopped) !== stopped || p.running) continue;
      const x = f.px(p.x);
      const y = f.py(p.y);
      ctx.moveTo(x + r, y);
      ctx.arc(x, y, r, 0, 2 * Math.PI);
    }
  };
  ctx.fillStyle = c.muted;
  ctx.strokeStyle = c.muted;
  ctx.globalAlpha = 0.55;
  dots(false, 3);
  ctx.fill();
  ctx.globalAlpha = 0.9;
  ctx.lineWidth = 1.5;
  dots(true, 3.5);
  ctx.stroke();
  // running members: hollow squares in the accent colour, at their newest figures
  ctx.strokeStyle = c.accent;
  ctx.beginPath();
  for (const p of points) if (p.running) ctx.rect(f.px(p.x) - 4, f.py(p.y) - 4, 8, 8);
  ctx.stroke();
  ctx.globalAlpha = 1;
  if (marked !== null && points[marked]) {
    const p = points[marked] as ScatterPoint;
    ctx.strokeStyle = c.accent;
    ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.arc(f.px(p.x), f.py(p.y), 10, 0, 2 * Math.PI);
    ctx.stroke();
  }
  // the frontier: a line through its members, each ringed
  ctx.strokeStyle = c.accent;
  ctx.fillStyle = c.accent;
  ctx.lineWidth = 2;
  ctx.beginPath();
  frontier.forEach((i, n) => {
    const p = points[i] as ScatterPoint;
    if (n === 0) ctx.moveTo(f.px(p.x), f.py(p.y));
    else ctx.lineTo(f.px(p.x), f.py(p.y));
  });
  ctx.stroke();
  ctx.beginPath();
  for (const i of frontier) {
    const p = points[i] as ScatterPoint;
    ctx.moveTo(f.px(p.x) + 5, f.py(p.y));
    ctx.arc(f.px(p.x), f.py(p.y), 5, 0, 2 * Math.PI);
  }
  ctx.fill();
}

/** The point nearest (x, y) in pixels, within HIT_PX, or null. */
function nearest(f: Frame, points: ScatterPoint[], x: number, y: number): number | null {
  let best: number | null = null;
  let bestD = HIT_PX * HIT_PX;
  points.forEach((p, i) => {
    const d = (f.px(p.x) - x) ** 2 + (f.py(p.y) - y) ** 2;
    if (d <= bestD) {
      bestD = d;
      best = i;
    }
  });
  return best;
}

export function ParetoScatter({ points, frontier, xLabel, yLabel, onOpen, describe, height = 340, xLog = false, marked = null }: Props) {
  const host = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const [width, setWidth] = useState(640);
  const [hover, setHover] = useState<number | null>(null);
  const frame = useMemo(() => frameOf(points, width, height, xLog), [points, width, height, xLog]);
  const markedIndex = marked?.index ?? null;

  useEffect(() => {
    const el = host.current;
    if (!el || typeof ResizeObserver === "undefined") return;
    const observer = new ResizeObserver(() => setWidth(Math.max(240, Math.floor(el.clientWidth))));
    observer.observe(el);
    return () => observer.disconnect();
  }, []);

  useEffect(() => {
    const el = canvas.current;
    if (!el) return;
    const started = performance.now();
    draw(el, frame, points, frontier, [xLabel, yLabel], markedIndex);
    const ms = performance.now() - started;
    el.dataset.drawMs = ms.toFixed(2);
    performance.measure?.("sweep-scatter-draw", { start: started, duration: ms });
  }, [frame, points, frontier, xLabel, yLabel, markedIndex]);

  const at = (event: React.MouseEvent<HTMLCanvasElement>) => {
    const box = event.currentTarget.getBoundingClientRect();
    return nearest(frame, points, event.clientX - box.left, event.clientY - box.top);
  };
  const hovered = hover !== null ? points[hover] : undefined;
  const stopped = points.filter((p) => p.stopped).length;
  const running = points.filter((p) => p.running).length;
  const markedPoint = marked ? points[marked.index] : undefined;
  return (
    <div ref={host} className="scatter" data-testid="sweep-scatter">
      <canvas
        ref={canvas}
        role="img"
        aria-label={`${yLabel} against ${xLabel}: ${points.length} members (${stopped} stopped early), ${frontier.length} on the Pareto frontier`}
        style={{ width: frame.width, height: frame.height, cursor: hovered ? "pointer" : "default" }}
        data-points={points.length}
        data-frontier={frontier.length}
        data-stopped={stopped}
        data-running={running}
        data-x-log={xLog || undefined}
        onMouseMove={(e) => setHover(at(e))}
        onMouseLeave={() => setHover(null)}
        onClick={(e) => {
          const i = at(e);
          if (i !== null) onOpen((points[i] as ScatterPoint).jobId);
        }}
      />
      {hovered && (
        <div className="scatter-tip small" style={{ left: frame.px(hovered.x) + 10, top: frame.py(hovered.y) - 10 }}>
          {hovered.label} · {tickText(hovered.x)}, {tickText(hovered.y)}
        </div>
      )}
      {stopped > 0 && (
        <p className="scatter-legend small muted" data-testid="scatter-legend">
          <span className="dot" aria-hidden="true" /> succeeded <span className="dot hollow" aria-hidden="true" /> stopped before its last
          step (early stopping, a cancel, its time limit): its figures at the stop, off the frontier
        </p>
      )}
      {running > 0 && (
        <p className="scatter-legend small muted" data-testid="running-legend">
          <span className="dot square" aria-hidden="true" /> running ({running}): at its newest figures, which still move; off the frontier
          until it succeeds
        </p>
      )}
      {marked && markedPoint && (
        <p className="small" data-testid="marked-point" data-job-id={markedPoint.jobId}>
          ◎ {marked.label}
        </p>
      )}
      {frontier.length > 0 && (
        // the frontier's members as links, in frontier order, with their points' pixels on the canvas
        <ol className="frontier-list small" data-testid="frontier-list">
          {frontier.map((i) => {
            const p = points[i] as ScatterPoint;
            return (
              <li key={p.jobId}>
                <Link
                  to={`/jobs/${p.jobId}`}
                  data-testid="frontier-point"
                  data-x={p.x}
                  data-y={p.y}
                  data-px={frame.px(p.x).toFixed(1)}
                  data-py={frame.py(p.y).toFixed(1)}
                >
                  {p.label} → job #{p.jobId}
                </Link>{" "}
                <span className="muted">{describe(p)}</span>
              </li>
            );
          })}
        </ol>
      )}
    </div>
  );
}
