import type { Gpu } from "../client/types";

const LABELS: Record<Gpu["source"], string> = { nvml: "NVML", simulated: "simulated" };

export function SourceBadge({ source }: { source: Gpu["source"] }) {
  return (
    <span
      className={`badge source source-${source}`}
      title={source === "nvml" ? "read from the driver through NVML" : "a simulated device: no real GPU"}
    >
      {LABELS[source] ?? source}
    </span>
  );
}
