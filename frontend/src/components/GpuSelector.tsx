import { deviceKey, type ExcludedDevice, type Gpu } from "../client/types";
import { formatBytes } from "../lib/format";
import { MemoryBar } from "./MemoryBar";
import { SourceBadge } from "./SourceBadge";

export interface Unavailable {
  reason: "busy" | "external" | "too_small" | "taken" | "lost";
  message: string;
}

/** Why a device cannot take the job, or null when it can. Busy first, then external, then size. */
export function unavailability(
  gpu: Gpu,
  bytesPerDevice: number | null,
  excluded?: ExcludedDevice,
  takenBy?: number | null,
): Unavailable | null {
  if (takenBy !== undefined) {
    return { reason: "taken", message: takenBy !== null ? `just taken by job #${takenBy}` : "just taken by another job" };
  }
  if (gpu.lost) return { reason: "lost", message: "NVML reports this GPU as lost" };
  if (gpu.held_by) return { reason: "busy", message: `busy: job #${gpu.held_by.job_id} (${gpu.held_by.owner})` };
  if (gpu.external_processes.length > 0) {
    const used = gpu.external_processes.reduce((s, p) => s + (p.used_memory_bytes ?? 0), 0);
    return { reason: "external", message: `used by an external process (${formatBytes(used)})` };
  }
  // the recommender's reason first: it counts a safety margin and stale readings
  if (excluded) return { reason: "too_small", message: excluded.message || excluded.reason };
  const free = gpu.memory_free_bytes ?? null;
  if (bytesPerDevice !== null && free !== null && free < bytesPerDevice) {
    return {
      reason: "too_small",
      message: `too small: needs ${formatBytes(bytesPerDevice)}, ${formatBytes(free)} free`,
    };
  }
  return null;
}

interface Props {
  devices: Gpu[];
  selected: ReadonlySet<string>;
  onChange: (next: Set<string>) => void;
  bytesPerDevice: number | null;
  excluded?: ExcludedDevice[];
  /** device key -> job id holding it, from a 409 */
  taken?: ReadonlyMap<string, number | null>;
  /** the job will queue: a device another job holds may be ticked, and the job waits for it */
  canWait?: boolean;
}

export function GpuSelector({ devices, selected, onChange, bytesPerDevice, excluded = [], taken, canWait = false }: Props) {
  const excludedByKey = new Map(excluded.map((e) => [deviceKey(e), e]));
  const toggle = (key: string) => {
    const next = new Set(selected);
    if (next.has(key)) next.delete(key);
    else next.add(key);
    onChange(next);
  };
  if (devices.length === 0) return <p className="muted">No devices reported yet.</p>;
  return (
    <ul className="gpu-select" data-testid="gpu-selector">
      {devices.map((gpu) => {
        const key = deviceKey(gpu);
        const why = unavailability(gpu, bytesPerDevice, excludedByKey.get(key), taken?.get(key));
        const checked = selected.has(key);
        const waits = canWait && (why?.reason === "busy" || why?.reason === "taken");
        return (
          <li
            key={key}
            className={`gpu-option ${why ? `unavailable reason-${why.reason}` : ""} ${checked ? "checked" : ""}`}
            data-testid="gpu-option"
            data-uuid={gpu.uuid}
          >
            <label>
              <input
                type="checkbox"
                checked={checked}
                disabled={why !== null && !checked && !waits}
                onChange={() => toggle(key)}
                aria-describedby={why ? `why-${gpu.uuid}` : undefined}
              />
              <span className="gpu-option-name">
                <strong>GPU {gpu.index}</strong> {gpu.name}
                {devices.some((d) => d.node !== gpu.node) && <span className="muted"> @ {gpu.node}</span>}
              </span>
              <SourceBadge source={gpu.source} />
            </label>
            <MemoryBar
              usedBytes={gpu.memory_used_bytes ?? null}
              totalBytes={gpu.memory_total_bytes}
              plannedBytes={checked ? (bytesPerDevice ?? 0) : 0}
              compact
            />
            <span className="gpu-option-free muted">{formatBytes(gpu.memory_free_bytes ?? null)} free</span>
            {why && (
              <span className="why" id={`why-${gpu.uuid}`} data-testid="gpu-reason">
                {why.message}
                {waits && " · the job waits for it"}
              </span>
            )}
          </li>
        );
      })}
    </ul>
  );
}
