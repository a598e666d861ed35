import type { Job, JobKindInfo } from "../../client/types";
import { formatMetric, numberOrNull } from "../../lib/format";

type Figure = JobKindInfo["summary_metrics"][number];

/** The value at a dotted config path ("loss_recovered", "ddp.bucket_cap_mb"); undefined if absent. */
function configValue(config: Job["config"], path: string): unknown {
  let value: unknown = config;
  for (const part of path.split(".")) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** Whether the config field a figure needs is off: absent, null, false, "off" or a choice of type "off". */
export function switchedOff(config: Job["config"], path: string): boolean {
  const value = configValue(config, path);
  if (value === undefined || value === null || value === false || value === "off") return true;
  return typeof value === "object" && (value as Record<string, unknown>)["type"] === "off";
}

/** "loss_recovered" -> "loss recovered": a config path as the sentence names it. */
const fieldWords = (path: string): string => path.replace(/[._]/g, " ");

/**
 * The kind's summary figures, each its newest value (`latest`). A figure whose config switch is
 * off says so once for all it turns on ("not measured: turn on loss recovered", not four bare
 * dashes); a count over a window says the steps it is over ("12 (last 400 steps)").
 */
export function SummaryFigures({ job, figures, latest }: { job: Job; figures: readonly Figure[]; latest: (metric: string) => unknown }) {
  const saidOff = new Set<string>();
  return (
    <>
      {figures.map((m, i) => {
        if (m.needs && switchedOff(job.config, m.needs)) {
          if (saidOff.has(m.needs)) return null;
          saidOff.add(m.needs);
          return (
            <div key={m.metric}>
              <dt>{m.label}</dt>
              <dd className="muted small" data-testid="not-measured">
                not measured: turn on {fieldWords(m.needs)}
              </dd>
            </div>
          );
        }
        const value = numberOrNull(latest(m.metric));
        const window = m.window_metric ? numberOrNull(latest(m.window_metric)) : null;
        // an ended job's dash is "never reported" (e.g. sae_eval's loss recovered when zeroing
        // the hook costs nothing), not "not yet": say where the reason may be
        const missing = value === null && job.finished_at != null ? "not reported by this job; its log may say why" : undefined;
        return (
          <div key={m.metric}>
            <dt>{m.label}</dt>
            <dd data-testid={i === 0 ? "last-loss" : undefined} title={missing}>
              {formatMetric(m.metric, value)}
              {value !== null && window !== null && (
                <span className="muted small" data-testid="figure-window">
                  {" "}
                  (last {window.toLocaleString("en-US")} step{window === 1 ? "" : "s"})
                </span>
              )}
            </dd>
          </div>
        );
      })}
    </>
  );
}
