import { render, screen } from "@testing-library/react";
import { MemoryRouter } from "react-router-dom";
import { describe, expect, it } from "vitest";
import { makeGpu } from "../test/fixtures";
import { GpuCard } from "./GpuCard";
import { MemoryFigures, onSimulatedDevices } from "./MemoryFigures";

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

const card = (gpu: ReturnType<typeof makeGpu>) =>
  render(
    <MemoryRouter>
      <GpuCard gpu={gpu} series={undefined} revision={0} />
    </MemoryRouter>,
  );

describe("memory figures say which is the CUDA estimate and which the CPU peak", () => {
  it("on a simulated device: the bar is its job's CUDA estimate, a rank's memory its host RSS", () => {
    const rank = {
      pid: 4242,
      command: "python",
      managed: true,
      job_id: 12,
      kind: "sae",
      rank: 0,
      used_memory_bytes: null,
      host_peak_rss_bytes: 812 * MIB,
    };
    card(makeGpu({ memory_used_bytes: 2 * GIB, processes: [rank] }));
    expect(screen.getByTestId("mem-what")).toHaveTextContent("(CUDA estimate of its job)");
    expect(screen.getByTestId("process")).toHaveTextContent("812.0 MiB RSS");
  });

  it("on an NVML device: readings, with nothing to tell apart", () => {
    const rank = { pid: 4242, command: "python", managed: true, job_id: 12, kind: "sae", rank: 0, used_memory_bytes: 3 * GIB };
    card(makeGpu({ uuid: "GPU-1", source: "nvml", processes: [rank] }));
    expect(screen.queryByTestId("mem-what")).toBeNull();
    expect(screen.getByTestId("process")).not.toHaveTextContent("RSS");
  });

  it("on the job page: the peak named host RSS on simulated devices, the device's on GPUs", () => {
    expect(onSimulatedDevices([{ uuid: "SIM-0" }, { uuid: "SIM-1" }])).toBe(true);
    expect(onSimulatedDevices([{ uuid: "GPU-0" }])).toBe(false);
    const { unmount } = render(<MemoryFigures estimateBytes={GIB} peakBytes={300 * MIB} simulated />);
    expect(screen.getByTestId("job-estimate")).toHaveTextContent("1.0 GiB est. (CUDA)");
    expect(screen.getByTestId("job-peak")).toHaveTextContent("300.0 MiB peak (host RSS, CPU)");
    expect(screen.getByTestId("job-peak").title).toMatch(/not comparable with the CUDA estimate/);
    unmount();
    render(<MemoryFigures estimateBytes={GIB} peakBytes={900 * MIB} simulated={false} />);
    expect(screen.getByTestId("job-peak")).toHaveTextContent("900.0 MiB peak (GPU)");
  });
});
