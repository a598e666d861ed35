/**
 * A summary figure against a setting the compared jobs differ in (lr, k, ...): one dot per job,
 * in the job's colour, on a log x axis where the setting's values span a decade or more (a
 * learning rate from 1e-4 to 1e-2). The best job on the figure, where the better way is plain,
 * is ringed and named.
 */
import { useState } from "react";
import type { Job } from "../../client/types";
import type { FigureRow } from "../../lib/compare";
import { formatMetric } from "../../lib/format";
import { axisOf, logAxisOf, spansDecades, tickText, toPixel } from "../../lib/sweep/scale";

const W = 640;
const H = 240;
const M = { left: 56, right: 16, top: 12, bottom: 40 };

interface Props {
  jobs: Job[];
  settings: { path: string; values: (number | null)[] }[];
  figures: FigureRow[];
  colorOf: (index: number) => string;
}

export function SettingScatter({ jobs, settings, figures, colorOf }: Props) {
  const [xPath, setXPath] = useState("");
  const [yMetric, setYMetric] = useState("");
  const setting = settings.find((s) => s.path === xPath) ?? settings[0];
  const figure = figures.find((f) => f.metric === yMetric) ?? figures[0];
  if (!setting || !figure) {
    return (
      <div className="card" data-testid="setting-scatter">
        <h2>Figure against setting</h2>
        <p className="muted small">
          {!setting ? "No numeric setting differs between these jobs." : "None of these jobs has reported a summary figure yet."}
        </p>
      </div>
    );
  }
  const points = jobs.flatMap((job, i) => {
    const x = setting.values[i];
    const y = figure.values[i];
    return x !== null && x !== undefined && y !== null && y !== undefined ? [{ job, i, x, y }] : [];
  });
  const xs = points.map((p) => p.x);
  const log = spansDecades(xs);
  const xAxis = log ? logAxisOf(xs) : axisOf(xs);
  const yAxis = axisOf(points.map((p) => p.y));
  const px = (v: number) => toPixel(xAxis, v, M.left, W - M.right);
  const py = (v: number) => toPixel(yAxis, v, H - M.bottom, M.top);
  const best = figure.best !== null ? jobs[figure.best] : undefined;
  const bestX = figure.best !== null ? setting.values[figure.best] : null;
  return (
    <div className="card" data-testid="setting-scatter">
      <div className="section-head">
        <h2>Figure against setting</h2>
        <label className="axis-picker small">
          figure{" "}
          <select aria-label="scatter figure" value={figure.metric} onChange={(e) => setYMetric(e.target.value)}>
            {figures.map((f) => (
              <option key={f.metric} value={f.metric}>
                {f.label}
              </option>
            ))}
          </select>
        </label>
        <label className="axis-picker small">
          setting{" "}
          <select aria-label="scatter setting" value={setting.path} onChange={(e) => setXPath(e.target.value)}>
            {settings.map((s) => (
              <option key={s.path} value={s.path}>
                {s.path}
              </option>
            ))}
          </select>
        </label>
      </div>
      <svg
        viewBox={`0 0 ${W} ${H}`}
        className="setting-scatter"
        role="img"
        aria-label={`${figure.label} against ${setting.path}`}
        data-log-x={log || undefined}
      >
        {xAxis.ticks.map((t) => (
          <g key={`x${t}`}>
            <line x1={px(t)} x2={px(t)} y1={M.top} y2={H - M.bottom} className="grid" />
            <text x={px(t)} y={H - M.bottom + 16} textAnchor="middle" className="tick">
              {tickText(t)}
            </text>
          </g>
        ))}
        {yAxis.ticks.map((t) => (
          <g key={`y${t}`}>
            <line x1={M.left} x2={W - M.right} y1={py(t)} y2={py(t)} className="grid" />
            <text x={M.left - 6} y={py(t) + 4} textAnchor="end" className="tick">
              {tickText(t)}
            </text>
          </g>
        ))}
        <text x={(M.left + W - M.right) / 2} y={H - 6} textAnchor="middle" className="axis-title">
          {setting.path}
          {log ? " (log scale)" : ""}
        </text>
        {points.map((p) => (
          <g key={p.job.id} data-testid="scatter-point" data-job-id={p.job.id}>
            <title>{`#${p.job.id} ${p.job.name}: ${setting.path} ${tickText(p.x)}, ${figure.label} ${formatMetric(figure.metric, p.y)}`}</title>
            {best?.id === p.job.id && <circle cx={px(p.x)} cy={py(p.y)} r={10} className="best-ring" />}
            <circle cx={px(p.x)} cy={py(p.y)} r={5} fill={colorOf(p.i)} />
          </g>
        ))}
      </svg>
      {best && (
        <p className="small" data-testid="scatter-best">
          Best {figure.label}: #{best.id} {best.name}
          {bestX !== null && bestX !== undefined ? ` at ${setting.path} ${tickText(bestX)}` : ` (no ${setting.path} set)`}.
        </p>
      )}
    </div>
  );
}
