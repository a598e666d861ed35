import { deviceKey, type Gpu, type Recommendation } from "../client/types";
import { unavailability } from "../components/GpuSelector";

export interface StartInput {
  /** the ticked devices: the job runs on exactly these */
  selected: readonly Gpu[];
  bytesPerDevice: number | null;
  /** the recommendation for the count, when no device is ticked */
  recommendation: Recommendation | undefined;
  recommendationError: string | null;
  recommendationUnavailable: boolean;
  /** device key -> job id holding it, from a 409 */
  taken: ReadonlyMap<string, number | null>;
  /** the job may wait in the queue (the default): busy devices are no reason not to submit */
  canWait: boolean;
  /** the devices asked for when none is ticked */
  count: number;
}

// A device that is busy now frees when its holder ends: a queued job can wait for it. One too
// small for the job never will.
const WAITABLE = new Set(["busy", "taken"]);
// "shared": held by sharing jobs, it frees when they end, as a device held whole does.
const WAITABLE_EXCLUSIONS = new Set(["held_by_job", "shared", "external_process"]);

function fitsOnceFree(recommendation: Recommendation, count: number): boolean {
  const busy = recommendation.excluded.filter((e) => WAITABLE_EXCLUSIONS.has(e.reason)).length;
  return recommendation.devices.length + busy >= count;
}

/**
 * Why "Start job" cannot be pressed now, or null. The form submits exactly what it shows: the
 * ticked devices when there are any (each must be able to take the job), else the count, which
 * needs a recommendation that found enough devices (or, when it may queue, enough once the busy
 * ones free);
 * otherwise it says why, in the API's words.
 */
export function startBlocker(input: StartInput): string | null {
  if (input.selected.length > 0) {
    for (const gpu of input.selected) {
      const why = unavailability(gpu, input.bytesPerDevice, undefined, input.taken.get(deviceKey(gpu)));
      if (why && !(input.canWait && WAITABLE.has(why.reason))) return `GPU ${gpu.index}: ${why.message}`;
    }
    return null;
  }
  const recommendation = input.recommendation;
  if (recommendation) {
    if (recommendation.enough || (input.canWait && fitsOnceFree(recommendation, input.count))) return null;
    return recommendation.message;
  }
  if (input.recommendationError) return `No recommendation: ${input.recommendationError}`;
  return input.recommendationUnavailable ? "No recommendation: fix the form first." : "Waiting for a recommendation…";
}
