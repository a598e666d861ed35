import type { Gpu } from "../client/types";

const LABELS: Record<Gpu["source"], string> = { nvml: "NVML", simulated: "simulated" };

export function SourceBadge({ source }: { source: Gpu["source"] }) {
  return (
    <span
      className={`badge source source-${source}`}
      title={
        source === "nvml"
          ? "read from the driver through NVML"
          : "a simulated device, no real GPU: memory is what its job declares; utilization, power and clock follow the CPU work of the job's processes"
      }
    >
      {LABELS[source] ?? source}
    </span>
  );
}
