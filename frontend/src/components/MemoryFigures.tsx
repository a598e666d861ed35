import { formatBytes } from "../lib/format";

/**
 * The device type every job's estimate is for: the API stores, admits and simulates the CUDA
 * figure (simulated devices stand for GPUs), so the form, the job page and the board show that
 * one, labelled, and never a CPU figure beside it.
 */
export const ESTIMATE_DEVICE_TYPE = "cuda" as const;
export const ESTIMATE_LABEL = "CUDA, incl. framework reserve";

/** Whether a job ran on simulated devices (their uuids are "SIM-…"): its ranks ran on the CPU. */
export function onSimulatedDevices(devices: readonly { uuid: string }[]): boolean {
  return devices.length > 0 && devices.every((d) => d.uuid.startsWith("SIM-"));
}

/**
 * "1.0 GiB est. (CUDA) · 812 MiB peak (host RSS)": the estimate next to what the job really
 * used, each labelled with what it is. On simulated devices the peak is the ranks' host memory,
 * not a CUDA figure: said on the page, so the two are not read as like for like.
 */
export function MemoryFigures({
  estimateBytes,
  peakBytes,
  simulated = false,
}: {
  estimateBytes: number | null | undefined;
  peakBytes: number | null | undefined;
  simulated?: boolean;
}) {
  const peakTitle = simulated
    ? "measured: the ranks' peak resident host memory (simulated devices run on the CPU), not comparable with the CUDA estimate"
    : "measured: the device memory of the job's processes (NVML, and CUDA's peak allocation)";
  return (
    <span className="memory-figures">
      <span data-testid="job-estimate" title={`estimate per device (${ESTIMATE_LABEL})`}>
        {formatBytes(estimateBytes)} <span className="muted small">est. (CUDA)</span>
      </span>
      <span className="muted"> · </span>
      <span data-testid="job-peak" title={peakTitle}>
        {peakBytes === null || peakBytes === undefined ? "—" : formatBytes(peakBytes)}{" "}
        <span className="muted small">{simulated ? "peak (host RSS, CPU)" : "peak (GPU)"}</span>
      </span>
    </span>
  );
}
