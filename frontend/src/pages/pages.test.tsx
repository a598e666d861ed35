import { act, fireEvent, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useLocation } from "react-router-dom";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeGpu, makeJob, makeSaeKind, makeSample } from "../test/fixtures";
import kinds from "../test/kindSchemas.json";
import { renderNewJob } from "../test/newJobPage";
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
    act(() =>
      socket.receive({
        type: "sample",
        samples: [makeSample(1, [makeGpu({ index: 0, uuid: "A", utilization_gpu_pct: 88 }), makeGpu({ index: 1, uuid: "B" })])],
      }),
    );
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

  it("shows each node's address and health", async () => {
    const node = (name: string, address: string, online: boolean) => ({
      name,
      address,
      online,
      source: "simulated",
      device_count: 1,
      registered_at: "2026-11-23T20:00:00Z",
      last_seen_at: "2026-11-23T20:00:00Z",
    });
    const nodes = [node("node-a", "10.0.0.2", true), node("node-b", "10.0.0.3", false)];
    vi.stubGlobal("fetch", stubApi({ "GET /api/gpus": () => json([]), "GET /api/nodes": () => json(nodes) }).fetchMock);
    renderPage(<Dashboard />);
    const socket = telemetrySocket();
    act(() => {
      socket.open();
      socket.receive({ type: "sample", samples: [makeSample(0, [makeGpu({ uuid: "A" })], "node-a")] });
      socket.receive({ type: "sample", samples: [makeSample(0, [makeGpu({ node: "node-b", uuid: "B" })], "node-b")] });
    });
    const health = await screen.findAllByTestId("node-health");
    expect(health.map((h) => h.textContent)).toEqual(["online", "offline"]);
    expect(screen.getAllByTestId("node-group")[1]).toHaveTextContent("10.0.0.3");
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

  it("filters by search and owner, keeps the filter in the URL, and says when nothing matches", async () => {
    const items = [makeJob({ id: 1, name: "sweep-a", owner: "ana" }), makeJob({ id: 2, name: "probe", owner: "bo", status: "succeeded" })];
    const { fetchMock } = stubApi({ "GET /api/jobs": () => json({ items, total: 2, limit: 500, offset: 0 }) });
    vi.stubGlobal("fetch", fetchMock);
    renderPage(
      <>
        <Jobs />
        <LocationProbe />
      </>,
      { path: "/jobs", route: "/jobs?owner=bo" },
    );
    await waitFor(() => expect(screen.getAllByTestId("job-row").map((r) => r.dataset["jobId"])).toEqual(["2"]));
    expect(screen.getByTestId("job-row")).toHaveTextContent("completed");
    await userEvent.type(screen.getByLabelText("search jobs"), "sweep");
    expect(screen.getByTestId("location")).toHaveTextContent("/jobs?q=sweep&owner=bo");
    expect(screen.getByTestId("jobs-empty")).toHaveTextContent("No jobs match.");
    await userEvent.selectOptions(screen.getByLabelText("owner filter"), "");
    expect(screen.getAllByTestId("job-row").map((r) => r.dataset["jobId"])).toEqual(["1"]);
  });
});

/** Where the router is: the new-job page keeps its kind in the URL. */
function LocationProbe() {
  const location = useLocation();
  return <span data-testid="location">{location.pathname + location.search}</span>;
}

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
    device_type: "cuda",
    expectations: [{ label: "expected L0", value: "5", note: "exactly k latents on every sample" }],
  };
  const recommendation = {
    devices: [{ node: "node-a", uuid: "G1", index: 1, name: "Simulated H100", memory_total_bytes: 80 * GIB, memory_free_bytes: 72 * GIB }],
    excluded: [],
    enough: true,
    message: "GPU 1 fits",
  };

  function setup(createResponse: () => Response) {
    return renderNewJob(
      {
        "GET /api/kinds": () => json([makeSaeKind()]),
        "GET /api/kinds/sae": () => json(makeSaeKind()),
        "POST /api/estimate": () => json(estimate),
        "POST /api/gpus/recommend": () => json(recommendation),
        "GET /api/gpus": () => json([]),
        "POST /api/jobs": createResponse,
      },
      { devices },
    );
  }

  it("shows the estimate, takes the recommendation and submits those devices", async () => {
    const api = setup(() => json(makeJob({ id: 42 }), 201));
    expect(await screen.findByTestId("estimate-bytes")).toHaveTextContent("2.0 GiB");
    // the CUDA figure the job page and the board show, even on simulated devices
    expect(screen.getByTestId("estimate")).toHaveTextContent("per device (CUDA, incl. framework reserve)");
    // what the job should show, as the kind reads it from the config
    expect(screen.getByTestId("expectation")).toHaveTextContent("expected L05exactly k latents on every sample");
    expect(
      api.requests.filter((r) => r.path === "/api/estimate").every((r) => (r.body as { device_type: string }).device_type === "cuda"),
    ).toBe(true);
    const use = await screen.findByRole("button", { name: "Use recommended: GPU 1" });
    await userEvent.click(use);
    expect(within(screen.getAllByTestId("gpu-option")[1]!).getByRole("checkbox")).toBeChecked();
    await userEvent.click(screen.getByTestId("submit"));
    await screen.findByTestId("elsewhere");
    const create = api.requests.find((r) => r.method === "POST" && r.path === "/api/jobs");
    // "queue if busy" is ticked by default: the job waits if the devices are taken meanwhile
    expect(create?.body).toMatchObject({ kind: "sae", devices: [{ node: "node-a", uuid: "G1" }], config: { d_in: 64 }, queue: true });
  });

  it("submits exactly the ticked devices: the count follows them and cannot be edited", async () => {
    const api = setup(() => json(makeJob({ id: 42 }), 201));
    const countField = await screen.findByLabelText("device count");
    fireEvent.change(countField, { target: { value: "9" } });
    await userEvent.click(within(screen.getAllByTestId("gpu-option")[0]!).getByRole("checkbox"));
    expect(countField).toHaveValue(1);
    expect(countField).toBeDisabled();
    await waitFor(() => expect(screen.getByTestId("submit")).toBeEnabled());
    await userEvent.click(screen.getByTestId("submit"));
    await screen.findByTestId("elsewhere");
    const create = api.requests.find((r) => r.method === "POST" && r.path === "/api/jobs");
    expect(create?.body).toMatchObject({ devices: [{ node: "node-a", uuid: "G0" }] });
    expect(create?.body).not.toHaveProperty("count");
  });

  it("on a lab of several nodes, spreads a count over at most the nodes asked for, split evenly", async () => {
    const api = setup(() => json(makeJob({ id: 42 }), 201));
    await screen.findByLabelText("device count");
    expect(screen.queryByLabelText("node count")).toBeNull(); // one node: nothing to spread over
    act(() => telemetrySocket().receive({ type: "sample", samples: [makeSample(0, [makeGpu({ node: "node-b", uuid: "B0" })], "node-b")] }));
    const nodesField = await screen.findByLabelText("node count");
    fireEvent.change(screen.getByLabelText("device count"), { target: { value: "3" } });
    fireEvent.change(nodesField, { target: { value: "2" } });
    expect(screen.getByTestId("nodes-error")).toHaveTextContent("3 devices do not split evenly over 2 nodes");
    expect(screen.getByTestId("submit")).toBeDisabled();
    fireEvent.change(nodesField, { target: { value: "9" } });
    expect(nodesField).toHaveValue(2); // no more nodes than the lab has
    fireEvent.change(screen.getByLabelText("device count"), { target: { value: "4" } });
    expect(screen.queryByTestId("nodes-error")).toBeNull();
    await waitFor(() => expect(screen.getByTestId("submit")).toBeEnabled());
    await userEvent.click(screen.getByTestId("submit"));
    await screen.findByTestId("elsewhere");
    const create = api.requests.find((r) => r.method === "POST" && r.path === "/api/jobs");
    expect(create?.body).toMatchObject({ kind: "sae", count: 4, nodes: 2 });
    expect(create?.body).not.toHaveProperty("devices");
  });

  it("keeps Start disabled, with the API's reason, when no devices can take the job", async () => {
    const api = renderNewJob(
      {
        "GET /api/kinds/sae": () => json(makeSaeKind()),
        "POST /api/estimate": () => json(estimate),
        "POST /api/gpus/recommend": () => json({ ...recommendation, devices: [], enough: false, message: "does not fit any device" }),
        "GET /api/gpus": () => json([]),
      },
      { devices },
    );
    expect(await screen.findByText("does not fit any device")).toBeInTheDocument();
    expect(screen.getByTestId("submit")).toBeDisabled();
    await userEvent.click(screen.getByTestId("submit"));
    expect(api.requests.some((r) => r.method === "POST" && r.path === "/api/jobs")).toBe(false);
  });

  it("offers no recommendation made for another device count while the new one is on its way", async () => {
    let answerTwo: (r: Response) => void = () => {};
    const two = {
      ...recommendation,
      devices: [recommendation.devices[0]!, { ...recommendation.devices[0]!, uuid: "G0", index: 0 }],
      message: "GPUs 1, 0 fit",
    };
    const api = renderNewJob(
      {
        "GET /api/kinds/sae": () => json(makeSaeKind()),
        "POST /api/estimate": () => json(estimate),
        "POST /api/gpus/recommend": async (request) => {
          const body = (await request.json()) as { count: number };
          if (body.count === 1) return json(recommendation);
          return new Promise<Response>((resolve) => (answerTwo = resolve));
        },
        "GET /api/gpus": () => json([]),
      },
      { devices },
    );
    await screen.findByRole("button", { name: "Use recommended: GPU 1" });
    fireEvent.change(screen.getByLabelText("device count"), { target: { value: "2" } });
    await waitFor(() =>
      expect(api.requests.some((r) => r.path === "/api/gpus/recommend" && (r.body as { count: number }).count === 2)).toBe(true),
    );
    // the count-1 answer must not be offered (one click would select one device, not two)
    expect(screen.getByTestId("use-recommended")).toBeDisabled();
    expect(screen.getByTestId("use-recommended")).toHaveTextContent("recommending…");
    answerTwo(json(two));
    await userEvent.click(await screen.findByRole("button", { name: "Use recommended: GPU 1, 0" }));
    expect(
      screen
        .getAllByTestId("gpu-option")
        .map((o) => within(o).getByRole("checkbox"))
        .filter((c) => (c as HTMLInputElement).checked),
    ).toHaveLength(2);
  });

  it("opens the fields only once the kind's schema and defaults are in, so they never overwrite what the user types", async () => {
    let answerKind: (r: Response) => void = () => {};
    const api = renderNewJob({
      "GET /api/kinds/sae": () => new Promise<Response>((resolve) => (answerKind = resolve)),
      "POST /api/estimate": () => json(estimate),
      "POST /api/gpus/recommend": () => json(recommendation),
      "GET /api/gpus": () => json([]),
    });
    await waitFor(() => expect(api.requests.some((r) => r.path === "/api/kinds/sae")).toBe(true));
    expect(screen.queryByLabelText("steps", { exact: true })).toBeNull();
    expect(api.requests.some((r) => r.path === "/api/estimate")).toBe(false);
    answerKind(json({ ...makeSaeKind(), defaults: { ...makeSaeKind().defaults, steps: 1234 } }));
    const steps = await screen.findByLabelText("steps", { exact: true });
    expect(steps).toHaveValue("1234");
    await userEvent.clear(steps);
    await userEvent.type(steps, "400");
    expect(steps).toHaveValue("400");
    await waitFor(() => expect(api.requests.some((r) => r.path === "/api/estimate")).toBe(true));
    expect(steps).toHaveValue("400");
  });

  it("offers the registered kinds, keeps the choice in the URL, and draws the chosen kind's form", async () => {
    const linreg = {
      ...makeSaeKind(),
      name: "linreg",
      description: "least squares",
      config_schema: kinds.linreg.config_schema,
      defaults: kinds.linreg.defaults,
      estimates_memory: false,
    };
    const api = renderNewJob(
      {
        "GET /api/kinds": () => json([makeSaeKind(), linreg]),
        "GET /api/kinds/sae": () => json(makeSaeKind()),
        "GET /api/kinds/linreg": () => json(linreg),
        "POST /api/estimate": () => json(estimate),
        "POST /api/gpus/recommend": () => json(recommendation),
        "GET /api/gpus": () => json([]),
        "POST /api/jobs": () => json(makeJob({ id: 43, kind: "linreg" }), 201),
      },
      { route: "/new?kind=linreg" },
    );
    expect(await screen.findByLabelText("checkpoint_at_end")).toBeChecked();
    expect(screen.getByLabelText("kind")).toHaveValue("linreg");
    expect(screen.queryByLabelText("d_sae")).toBeNull();
    // the kind's batch field must split across the devices: said before submitting
    const batch = screen.getByLabelText("batch_size");
    fireEvent.change(screen.getByLabelText("device count"), { target: { value: "3" } });
    await userEvent.clear(batch);
    await userEvent.type(batch, "256");
    expect(await screen.findByTestId("error-batch_size")).toHaveTextContent("256 does not split evenly across 3 devices");
    fireEvent.change(screen.getByLabelText("device count"), { target: { value: "1" } });
    expect(screen.queryByTestId("error-batch_size")).toBeNull();
    // linreg (here) makes no estimate: none is asked for or shown, devices are recommended by count
    expect(screen.queryByText("Memory per device")).toBeNull();
    await userEvent.click(await screen.findByRole("button", { name: "Use recommended: GPU 1" }));
    expect(api.requests.some((r) => r.path === "/api/estimate")).toBe(false);
    await userEvent.click(screen.getByTestId("submit"));
    await screen.findByTestId("elsewhere");
    const create = api.requests.find((r) => r.method === "POST" && r.path === "/api/jobs");
    expect(create?.body).toMatchObject({ kind: "linreg", config: { ...kinds.linreg.defaults, batch_size: 256 } });
  });

  it("switches to another kind's form, at that kind's defaults", async () => {
    const linreg = { ...makeSaeKind(), name: "linreg", config_schema: kinds.linreg.config_schema, defaults: kinds.linreg.defaults };
    const api = stubApi({
      "GET /api/kinds": () => json([makeSaeKind(), linreg]),
      "GET /api/kinds/sae": () => json(makeSaeKind()),
      "GET /api/kinds/linreg": () => json(linreg),
      "POST /api/estimate": () => json(estimate),
      "POST /api/gpus/recommend": () => json(recommendation),
      "GET /api/gpus": () => json([]),
    });
    vi.stubGlobal("fetch", api.fetchMock);
    renderPage(
      <>
        <NewJob />
        <LocationProbe />
      </>,
      { path: "/new", route: "/new" },
    );
    expect(await screen.findByLabelText("d_sae")).toHaveValue("512");
    await screen.findByRole("option", { name: "linreg" });
    await userEvent.selectOptions(screen.getByLabelText("kind"), "linreg");
    expect(screen.getByTestId("location")).toHaveTextContent("/new?kind=linreg");
    expect(await screen.findByLabelText("checkpoint_at_end")).toBeChecked();
    expect(screen.getByLabelText("steps", { exact: true })).toHaveValue("200");
    expect(screen.queryByLabelText("d_sae")).toBeNull();
  });

  it("shows who got the devices first on a 409", async () => {
    setup(() =>
      json(
        {
          detail: {
            code: "gpu_busy",
            field: "devices",
            message: "devices busy: node-a/1 (job 5)",
            busy: [{ node: "node-a", uuid: "G1", index: 1, held_by_job_id: 5, reason: "held_by_job" }],
          },
        },
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
    setup(() =>
      json(
        { detail: [{ loc: ["body", "config", "d_sae"], msg: "Input should be less than or equal to 4194304", type: "less_than_equal" }] },
        422,
      ),
    );
    // Start opens once the recommendation is in
    await waitFor(() => expect(screen.getByTestId("submit")).toBeEnabled());
    await userEvent.click(screen.getByTestId("submit"));
    expect(await screen.findByTestId("error-d_sae")).toHaveTextContent("less than or equal to 4194304");
  });
});

describe("JobDetail", () => {
  it("follows the job over its WebSocket", async () => {
    const { fetchMock } = stubApi({
      "GET /api/jobs/7": () => json(makeJob()),
      "GET /api/kinds/sae": () => json(makeSaeKind()),
      "GET /api/jobs/7/metrics": () =>
        json({ items: [{ step: 10, metrics: { overall_loss: 1.5, l0: 20 }, created_at: new Date().toISOString() }], last_step: 10 }),
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
    expect(screen.getByTestId("job-estimate")).toHaveTextContent("1.0 MiB est. (CUDA)");
    expect(screen.getByTestId("job-estimate")).toHaveAttribute("title", "estimate per device (CUDA, incl. framework reserve)");
    expect(screen.getByTestId("job-peak")).toHaveTextContent("— peak");
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
    // A summary metric the newest row lacks (an SAE's held-out figures come at checkpoints
    // only) shows its latest value, not a dash.
    expect(screen.getByText("L0", { selector: "dt" }).nextElementSibling).toHaveTextContent("20");
    expect(screen.getByTestId("loss-chart").querySelector(".chart-host")).toHaveAttribute("data-points", "2");
    expect(screen.getByTestId("cancel")).toBeEnabled();
  });
});
