import { formatBytes } from "../lib/format";

/**
 * The device type every job's estimate is for: the API stores, admits and simulates the CUDA
 * figure (simulated devices stand for GPUs), so the form, the job page and the board show that
 * one, labelled, and never a CPU figure beside it.
 */
export const ESTIMATE_DEVICE_TYPE = "cuda" as const;
export const ESTIMATE_LABEL = "CUDA, incl. framework reserve";

/** "1.0 GiB est. (CUDA…) · 812 MiB peak": the estimate next to what the job really used. */
export function MemoryFigures({
  estimateBytes,
  peakBytes,
}: {
  estimateBytes: number | null | undefined;
  peakBytes: number | null | undefined;
}) {
  return (
    <span className="memory-figures">
      <span data-testid="job-estimate" title={`estimate per device (${ESTIMATE_LABEL})`}>
        {formatBytes(estimateBytes)} <span className="muted small">est. (CUDA)</span>
      </span>
      <span className="muted"> · </span>
      <span data-testid="job-peak" title="measured: NVML on GPUs, the ranks' peak RSS on simulated devices">
        {peakBytes === null || peakBytes === undefined ? "—" : formatBytes(peakBytes)} <span className="muted small">peak</span>
      </span>
    </span>
  );
}
