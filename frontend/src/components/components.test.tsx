import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { MemoryRouter } from "react-router-dom";
import { describe, expect, it, vi } from "vitest";
import { makeGpu } from "../test/fixtures";
import { GpuCard } from "./GpuCard";
import { GpuSelector } from "./GpuSelector";
import { JobForm } from "./JobForm";
import { MemoryBar } from "./MemoryBar";
import { MemoryBreakdown } from "./MemoryBreakdown";
import { ProgressBar } from "./ProgressBar";
import { StatusBadge } from "./StatusBadge";
import { defaultValues } from "../lib/jobForm";
import { allFields, fieldsFromSchema } from "../lib/schemaForm";
import kinds from "../test/kindSchemas.json";

const GIB = 1024 ** 3;

describe("MemoryBar", () => {
  it.each([
    [10, "low"],
    [70, "mid"],
    [95, "high"],
  ])("colours %i GiB of 100 as %s", (used, level) => {
    const { container } = render(<MemoryBar usedBytes={used * GIB} totalBytes={100 * GIB} />);
    expect(container.querySelector(".membar")).toHaveAttribute("data-level", level);
    expect(screen.getByText(`${used.toFixed(1)} GiB`)).toBeInTheDocument();
  });
});

describe("GpuCard", () => {
  const renderCard = (gpu = makeGpu()) =>
    render(
      <MemoryRouter>
        <GpuCard gpu={gpu} series={undefined} revision={0} />
      </MemoryRouter>,
    );

  it("shows name, source, readings and memory", () => {
    renderCard(makeGpu({ temperature_c: 61, power_watts: 350, utilization_gpu_pct: 73 }));
    expect(screen.getByText("Simulated H100")).toBeInTheDocument();
    expect(screen.getByText("simulated")).toBeInTheDocument();
    expect(screen.getByTestId("util")).toHaveTextContent("73%");
    expect(screen.getByTestId("temp")).toHaveTextContent("61°C");
    expect(screen.getByTestId("power")).toHaveTextContent("350 W / 700");
    expect(screen.getByTestId("holder")).toHaveTextContent("idle");
  });

  it("names the job holding the device by its name, with a link", () => {
    renderCard(makeGpu({ held_by: { job_id: 12, job_name: "big-sweep", owner: "ana" } }));
    expect(screen.getByRole("link", { name: "big-sweep" })).toHaveAttribute("href", "/jobs/12");
    expect(screen.getByTestId("holder")).toHaveTextContent("big-sweep #12 · ana");
  });

  it("shows a device whose ended job's node has not confirmed as releasing, not free", () => {
    const held_by = { job_id: 12, job_name: "big-sweep", owner: "ana", releasing: true };
    renderCard(makeGpu({ held_by }));
    expect(screen.getByTestId("holder")).toHaveTextContent("releasing from #12");
    expect(screen.getByTestId("holder")).not.toHaveTextContent("idle");
  });

  it("lists the device's processes, a job's rank linked and an external one flagged busy", () => {
    renderCard(
      makeGpu({
        processes: [
          {
            pid: 4242,
            user: "ana",
            command: "python -m gpudeck.engine.rank",
            used_memory_bytes: 2 * 1024 ** 3,
            managed: true,
            job_id: 12,
            rank: 1,
          },
          { pid: 999, user: "bo", command: "python train.py", used_memory_bytes: 1024 ** 3, managed: false },
        ],
      }),
    );
    const rows = screen.getAllByTestId("process");
    expect(rows[0]).toHaveTextContent("4242ana");
    expect(within(rows[0]!).getByRole("link")).toHaveAttribute("href", "/jobs/12");
    expect(rows[0]).toHaveTextContent("2.0 GiB");
    expect(rows[1]).toHaveTextContent("external · busy");
  });

  it("names a rank by its job, kind and rank and another process by its program, whole on hover", () => {
    const forkserver = "/home/ana/.local/share/gpudeck/venv/bin/python3.12 -c from multiprocessing.forkserver import main; main(9, 10)";
    const script = "/home/bo/projects/sweep/.venv/bin/python train.py --lr 3e-4";
    renderCard(
      makeGpu({
        processes: [
          {
            pid: 4242,
            command: forkserver,
            program: "python3.12 -c from multiprocessing...",
            managed: true,
            job_id: 12,
            kind: "sae",
            rank: 1,
            used_memory_bytes: null,
          },
          {
            pid: 4300,
            command: script,
            program: "python train.py --lr 3e-4",
            managed: true,
            job_id: 12,
            kind: "sae",
            rank: null,
            used_memory_bytes: null,
          },
          { pid: 999, command: script, program: "python train.py --lr 3e-4", managed: false, used_memory_bytes: null },
        ],
      }),
    );
    const [rank, child, other] = screen.getAllByTestId("process-command");
    expect(rank).toHaveTextContent(/^sae · rank 1$/);
    expect(rank).toHaveAttribute("title", forkserver);
    expect(screen.getAllByTestId("process")[0]).toHaveTextContent("#12");
    expect(child).toHaveTextContent(/^sae · python train.py --lr 3e-4$/);
    expect(other).toHaveTextContent(/^python train.py --lr 3e-4$/);
    expect(other).toHaveAttribute("title", script);
  });

  it("says when a process GPUDeck did not start uses it", () => {
    renderCard(makeGpu({ external_processes: [{ pid: 4242, used_memory_bytes: 2 * GIB }] }));
    expect(screen.getByTestId("holder")).toHaveTextContent("external process · 2.0 GiB");
  });
});

describe("GpuSelector", () => {
  const devices = [
    makeGpu({ index: 0, uuid: "G0" }),
    makeGpu({ index: 1, uuid: "G1", held_by: { job_id: 3, job_name: "x", owner: "bo" } }),
    makeGpu({ index: 2, uuid: "G2", external_processes: [{ pid: 1, used_memory_bytes: GIB }] }),
    makeGpu({ index: 3, uuid: "G3", memory_total_bytes: 16 * GIB, memory_used_bytes: 15 * GIB }),
    makeGpu({ index: 4, uuid: "G4" }),
  ];

  it("marks busy, external and too-small devices with the reason and disables them", () => {
    render(<GpuSelector devices={devices} selected={new Set()} onChange={() => {}} bytesPerDevice={4 * GIB} />);
    const options = screen.getAllByTestId("gpu-option");
    expect(within(options[0]!).queryByTestId("gpu-reason")).toBeNull();
    expect(within(options[1]!).getByTestId("gpu-reason")).toHaveTextContent("busy: job #3 (bo)");
    expect(within(options[2]!).getByTestId("gpu-reason")).toHaveTextContent("external process");
    expect(within(options[3]!).getByTestId("gpu-reason")).toHaveTextContent("too small: needs 4.0 GiB, 1.0 GiB free");
    expect(within(options[1]!).getByRole("checkbox")).toBeDisabled();
    expect(within(options[4]!).getByRole("checkbox")).toBeEnabled();
  });

  it("gives the recommender's reason when it left a device out", () => {
    const excluded = [{ node: "node-a", uuid: "G4", index: 4, reason: "stale_telemetry" as const, message: "no sample for 12 s" }];
    render(<GpuSelector devices={devices} selected={new Set()} onChange={() => {}} bytesPerDevice={GIB} excluded={excluded} />);
    expect(within(screen.getAllByTestId("gpu-option")[4]!).getByTestId("gpu-reason")).toHaveTextContent("no sample for 12 s");
  });

  it("shows devices taken by someone else since the form opened", () => {
    render(
      <GpuSelector
        devices={devices}
        selected={new Set(["node-a/G0"])}
        onChange={() => {}}
        bytesPerDevice={GIB}
        taken={new Map([["node-a/G0", 9]])}
      />,
    );
    expect(within(screen.getAllByTestId("gpu-option")[0]!).getByTestId("gpu-reason")).toHaveTextContent("just taken by job #9");
  });

  it("toggles selection", async () => {
    const onChange = vi.fn();
    render(<GpuSelector devices={devices} selected={new Set(["node-a/G4"])} onChange={onChange} bytesPerDevice={null} />);
    await userEvent.click(within(screen.getAllByTestId("gpu-option")[0]!).getByRole("checkbox"));
    expect([...onChange.mock.calls[0]![0]]).toEqual(["node-a/G4", "node-a/G0"]);
  });
});

describe("JobForm", () => {
  const groups = fieldsFromSchema(kinds.sae.config_schema, kinds.sae.defaults);
  const defaults = () => defaultValues(allFields(groups));

  it("shows the API's message beside the field it names", () => {
    render(
      <JobForm
        groups={groups}
        values={defaults()}
        onChange={() => {}}
        errors={{ "config.d_in": "Input should be greater than or equal to 1" }}
      />,
    );
    const field = screen.getByLabelText("d_in");
    expect(field).toHaveAttribute("aria-invalid", "true");
    expect(screen.getByTestId("error-d_in")).toHaveTextContent("Input should be greater than or equal to 1");
  });

  it("shows the fields of the chosen dataset only", async () => {
    const onChange = vi.fn();
    const { rerender } = render(<JobForm groups={groups} values={defaults()} onChange={onChange} errors={{}} />);
    expect(screen.getByLabelText("true features")).toBeInTheDocument();
    expect(screen.queryByLabelText("file")).toBeNull();
    await userEvent.selectOptions(screen.getByLabelText("type"), "file");
    expect(onChange).toHaveBeenCalledWith("dataset.type", "file");
    rerender(<JobForm groups={groups} values={{ ...defaults(), "dataset.type": "file" }} onChange={onChange} errors={{}} />);
    expect(screen.getByLabelText("file")).toBeInTheDocument();
  });
});

describe("small pieces", () => {
  it("ProgressBar reports step of total", () => {
    render(<ProgressBar value={25} total={100} />);
    expect(screen.getByRole("progressbar")).toHaveTextContent("25 / 100 · 25%");
  });

  it("ProgressBar copes with an unknown total", () => {
    render(<ProgressBar value={3} total={null} />);
    expect(screen.getByRole("progressbar")).toHaveTextContent("3 / ?");
  });

  it("StatusBadge carries the status class", () => {
    render(<StatusBadge status="failed" />);
    expect(screen.getByTestId("job-status")).toHaveClass("status-failed");
  });

  it("StatusBadge says starting for a queued job that already holds its devices", () => {
    const devices = [{ node: "vm", uuid: "G0", index: 0, rank: 0 }];
    render(<StatusBadge status="queued" devices={devices} />);
    expect(screen.getByTestId("job-status")).toHaveTextContent("starting");
    expect(screen.getByTestId("job-status")).toHaveAttribute("data-status", "queued");
  });

  it("MemoryBreakdown lists the parts, largest first", () => {
    render(
      <MemoryBreakdown
        estimate={{
          bytes_per_device: 3 * GIB,
          peak_step_bytes: 3 * GIB,
          breakdown: [
            { name: "parameters", bytes: GIB, note: "W_enc, W_dec, biases" },
            { name: "optimizer_state", bytes: 2 * GIB, note: "Adam moments" },
          ],
          method: "fake-tensor trace",
          world_size: 1,
          per_rank_batch: 4096,
          dtype: "float32",
          device_type: "cuda",
        }}
      />,
    );
    const rows = screen.getAllByRole("row");
    expect(rows[0]).toHaveTextContent("optimizer state");
    expect(rows[1]).toHaveTextContent("parameters");
    expect(screen.getByTestId("estimate-bytes")).toHaveTextContent("3.0 GiB");
  });
});

describe("windowData", () => {
  it("is always as long as the ring, with the unfilled past empty", async () => {
    const { windowData } = await import("./SeriesSparkline");
    const { TelemetryStore } = await import("../hooks/telemetryStore");
    const { makeSample } = await import("../test/fixtures");
    const store = new TelemetryStore(10);
    for (let s = 0; s < 3; s += 1) store.ingest(makeSample(s, [makeGpu({ utilization_gpu_pct: 10 * s })]));
    const [x, util] = windowData(store.series("node-a/SIM-0")) as unknown as [number[], (number | null)[]];
    expect(x).toHaveLength(10);
    expect(util).toEqual([null, null, null, null, null, null, null, 0, 10, 20]);
    expect([...x].sort((a, b) => a - b)).toEqual(x);
  });
});
