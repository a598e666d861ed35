import { ApiError, fieldErrors } from "../client/api";
import type { Estimate, JobKind, Recommendation, RecommendStrategy, KindConfig } from "../client/types";
import { useEstimate, useRecommendation } from "./queries";
import { useDebounced } from "./useDebounced";

export interface PlacementInput {
  kind: JobKind;
  config: KindConfig;
  /** the form's values are the ones to estimate (the API's defaults are in) */
  ready: boolean;
  /** the kind estimates memory: without an estimate, devices are recommended by count alone */
  estimatesMemory: boolean;
  worldSize: number;
  deviceType: "cpu" | "cuda";
  count: number;
  strategy: RecommendStrategy;
  /** bumped to ask for a new recommendation (after a 409) */
  refreshKey: number;
}

export interface Placement {
  estimate: Estimate | undefined;
  estimateError: Error | null;
  /** the estimate's 422, by field ("config.d_in" -> message) */
  estimateErrors: Record<string, string>;
  bytesPerDevice: number | null;
  /** the recommendation made for the form as it is now; undefined while one is being made */
  recommendation: Recommendation | undefined;
  /** the recommender's error, or null */
  recommendationError: string | null;
  /** no recommendation is coming (the recommender failed, or there is no estimate to ask with) */
  recommendationUnavailable: boolean;
}

/** The memory estimate for the form's config (debounced) and the devices recommended for it. */
export function usePlacement(input: PlacementInput): Placement {
  const settledConfig = useDebounced(input.config, 350);
  const estimate = useEstimate(input.kind, settledConfig, input.worldSize, input.deviceType, input.ready && input.estimatesMemory);
  const estimateErrors = estimate.error instanceof ApiError && estimate.error.status === 422 ? fieldErrors(estimate.error.body) : {};
  const estimated = estimate.data && !estimate.error ? estimate.data.bytes_per_device : null;
  const bytesPerDevice = input.estimatesMemory ? estimated : input.ready ? 0 : null;
  const recommendation = useRecommendation(bytesPerDevice, input.count, input.strategy, input.refreshKey);
  // Offer only a recommendation made for what the form says now: while the estimate or the
  // recommendation is being redone (count, strategy or a field changed) the previous answer is
  // still at hand (placeholderData), and taking it selected the wrong number of devices.
  const current =
    settledConfig === input.config && !estimate.isPlaceholderData && recommendation.isSuccess && !recommendation.isPlaceholderData;
  return {
    estimate: estimate.data,
    estimateError: estimate.error,
    estimateErrors,
    bytesPerDevice,
    recommendation: current ? recommendation.data : undefined,
    recommendationError: recommendation.error?.message ?? null,
    recommendationUnavailable: recommendation.error !== null || (bytesPerDevice === null && estimate.error !== null),
  };
}
