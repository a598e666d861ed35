import { act, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeGpu, makeJob, makeSample } from "../test/fixtures";
import { json, renderPage, stubApi } from "../test/render";
import { Dashboard } from "./Dashboard";
import { JobDetail } from "./JobDetail";
import { Jobs } from "./Jobs";
import { NewJob } from "./NewJob";

const GIB = 1024 ** 3;

beforeEach(() => {
  FakeWebSocket.reset();
  vi.stubGlobal("fetch", stubApi({ "GET /api/gpus": () => json([]) }).fetchMock);
});
afterEach(() => vi.unstubAllGlobals());

function telemetrySocket(): FakeWebSocket {
  const socket = FakeWebSocket.instances.find((s) => s.url.includes("/ws/telemetry"));
  if (!socket) throw new Error("no telemetry socket");
  return socket;
}

describe("Dashboard", () => {
  it("shows a card per device, updates live, and toggles the aggregated view", async () => {
    renderPage(<Dashboard />);
    expect(screen.getByText(/Waiting for the first telemetry sample/)).toBeInTheDocument();
    const socket = telemetrySocket();
    act(() => {
      socket.open();
      socket.receive({ type: "snapshot", samples: [makeSample(0, [makeGpu({ index: 0, uuid: "A" }), makeGpu({ index: 1, uuid: "B" })])] });
    });
    expect(screen.getAllByTestId("gpu-card")).toHaveLength(2);
    act(() => socket.receive({ type: "sample", samples: [makeSample(1, [makeGpu({ index: 0, uuid: "A", utilization_gpu_pct: 88 }), makeGpu({ index: 1, uuid: "B" })])] }));
    expect(within(screen.getAllByTestId("gpu-card")[0]!).getByTestId("util")).toHaveTextContent("88%");
    await userEvent.click(screen.getByRole("button", { name: "aggregated" }));
    expect(screen.getByTestId("aggregate")).toHaveTextContent("2 devices");
    expect(screen.queryAllByTestId("gpu-card")).toHaveLength(0);
  });

  it("groups devices by node when there are several", () => {
    renderPage(<Dashboard />);
    const socket = telemetrySocket();
    act(() => {
      socket.open();
      socket.receive({ type: "sample", samples: [makeSample(0, [makeGpu({ uuid: "A" })], "node-a")] });
      socket.receive({ type: "sample", samples: [makeSample(0, [makeGpu({ node: "node-b", uuid: "B" })], "node-b")] });
    });
    const groups = screen.getAllByTestId("node-group");
    expect(groups).toHaveLength(2);
    expect(groups[1]).toHaveTextContent("node-b");
  });
});

describe("Jobs", () => {
  it("lists jobs with status, devices and progress", async () => {
    const { fetchMock } = stubApi({ "GET /api/jobs": () => json({ items: [makeJob()], total: 1, limit: 25, offset: 0 }) });
    vi.stubGlobal("fetch", fetchMock);
    renderPage(<Jobs />);
    const row = await screen.findByTestId("job-row");
    expect(row).toHaveTextContent("#7 sae-test");
    expect(row).toHaveTextContent("running");
    expect(row).toHaveTextContent("0, 1");
    expect(within(row).getByRole("progressbar")).toHaveTextContent("25 / 100");
  });
});

describe("NewJob", () => {
  const devices = [makeGpu({ index: 0, uuid: "G0" }), makeGpu({ index: 1, uuid: "G1" })];
  const estimate = {
    bytes_per_device: 2 * GIB,
    peak_step_bytes: 2 * GIB,
    breakdown: [
      { name: "parameters", bytes: GIB, note: "" },
      { name: "activations", bytes: GIB, note: "" },
    ],
    method: "trace",
    world_size: 1,
    per_rank_batch: 4096,
    dtype: "float32",
    device_type: "cpu",
  };
  const recommendation = {
    devices: [{ node: "node-a", uuid: "G1", index: 1, name: "Simulated H100", memory_total_bytes: 80 * GIB, memory_free_bytes: 72 * GIB }],
    excluded: [],
    enough: true,
    message: "GPU 1 fits",
  };

  function setup(createResponse: () => Response) {
    const api = stubApi({
      "POST /api/estimate": () => json(estimate),
      "POST /api/gpus/recommend": () => json(recommendation),
      "GET /api/gpus": () => json([]),
      "POST /api/jobs": createResponse,
    });
    vi.stubGlobal("fetch", api.fetchMock);
    renderPage(<NewJob />, { path: "/new", route: "/new" });
    act(() => {
      telemetrySocket().open();
      telemetrySocket().receive({ type: "sample", samples: [makeSample(0, devices)] });
    });
    return api;
  }

  it("shows the estimate, takes the recommendation and submits those devices", async () => {
    const api = setup(() => json(makeJob({ id: 42 }), 201));
    expect(await screen.findByTestId("estimate-bytes")).toHaveTextContent("2.0 GiB");
    const use = await screen.findByRole("button", { name: "Use recommended: GPU 1" });
    await userEvent.click(use);
    expect(within(screen.getAllByTestId("gpu-option")[1]!).getByRole("checkbox")).toBeChecked();
    await userEvent.click(screen.getByTestId("submit"));
    await screen.findByTestId("elsewhere");
    const create = api.requests.find((r) => r.method === "POST" && r.path === "/api/jobs");
    expect(create?.body).toMatchObject({ kind: "sae", devices: [{ node: "node-a", uuid: "G1" }], config: { d_in: 64 } });
  });

  it("shows who got the devices first on a 409", async () => {
    setup(() =>
      json(
        { detail: { code: "gpu_busy", field: "devices", message: "devices busy: node-a/1 (job 5)", busy: [{ node: "node-a", uuid: "G1", index: 1, held_by_job_id: 5, reason: "held_by_job" }] } },
        409,
      ),
    );
    await userEvent.click(await screen.findByRole("button", { name: "Use recommended: GPU 1" }));
    await userEvent.click(screen.getByTestId("submit"));
    const conflict = await screen.findByTestId("conflict");
    expect(conflict).toHaveTextContent("devices busy");
    expect(within(conflict).getByRole("link", { name: "job #5" })).toHaveAttribute("href", "/jobs/5");
    expect(within(screen.getAllByTestId("gpu-option")[1]!).getByTestId("gpu-reason")).toHaveTextContent("just taken by job #5");
  });

  it("puts a 422's messages beside the fields", async () => {
    setup(() => json({ detail: [{ loc: ["body", "config", "d_sae"], msg: "Input should be less than or equal to 4194304", type: "less_than_equal" }] }, 422));
    await userEvent.click(await screen.findByTestId("submit"));
    expect(await screen.findByTestId("error-d_sae")).toHaveTextContent("less than or equal to 4194304");
  });
});

describe("JobDetail", () => {
  it("follows the job over its WebSocket", async () => {
    const { fetchMock } = stubApi({
      "GET /api/jobs/7": () => json(makeJob()),
      "GET /api/jobs/7/metrics": () => json({ items: [{ step: 10, metrics: { overall_loss: 1.5, l0: 20 }, created_at: new Date().toISOString() }], last_step: 10 }),
      "GET /api/jobs/7/logs": () => new Response("step 10 loss 1.5\n", { status: 200, headers: { "Content-Type": "text/plain" } }),
      "GET /api/jobs/7/checkpoints": () =>
        json([
          {
            step: 50,
            path: "checkpoints/7/step_50",
            size_bytes: 2048,
            loss: 0.5,
            created_at: new Date().toISOString(),
            files: [{ name: "sae_weights.safetensors", size_bytes: 1024, url: "/api/jobs/7/checkpoints/50/files/sae_weights.safetensors" }],
          },
        ]),
    });
    vi.stubGlobal("fetch", fetchMock);
    vi.stubGlobal("WebSocket", FakeWebSocket);
    renderPage(<JobDetail />, { path: "/jobs/:id", route: "/jobs/7" });
    expect(await screen.findByRole("progressbar", { name: "training progress" })).toHaveTextContent("25 / 100");
    expect(await screen.findByTestId("log-tail")).toHaveTextContent("step 10 loss 1.5");
    expect(await screen.findByRole("link", { name: "sae_weights.safetensors" })).toHaveAttribute(
      "href",
      "/api/jobs/7/checkpoints/50/files/sae_weights.safetensors",
    );
    await waitFor(() => expect(screen.getByTestId("loss-chart").querySelector(".chart-host")).toHaveAttribute("data-points", "1"));
    await waitFor(() => expect(FakeWebSocket.instances.some((s) => s.url.endsWith("/ws/jobs/7"))).toBe(true));
    const socket = FakeWebSocket.instances.find((s) => s.url.endsWith("/ws/jobs/7"))!;
    act(() => {
      socket.open();
      socket.receive({ type: "snapshot", job: makeJob(), metrics: [{ step: 10, metrics: { overall_loss: 1.5 } }] });
      socket.receive({ type: "progress", rank: 0, ts: 1, data: { step: 60, total: 100 } });
      socket.receive({ type: "metrics", rank: 0, ts: 1, data: { step: 60, metrics: { overall_loss: 0.25 } } });
    });
    expect(screen.getByRole("progressbar", { name: "training progress" })).toHaveTextContent("60 / 100");
    expect(screen.getByTestId("last-loss")).toHaveTextContent("0.250");
    expect(screen.getByTestId("loss-chart").querySelector(".chart-host")).toHaveAttribute("data-points", "2");
    expect(screen.getByTestId("cancel")).toBeEnabled();
  });
});
