import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Cluster, ClusterState } from "../client/clusterTypes";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeCluster, makeGpu, makeJob, makeSaeKind } from "../test/fixtures";
import { ALL_BUSY, ONE_GIB_ESTIMATE, renderNewJob } from "../test/newJobPage";
import { json, type Handler } from "../test/render";
import { makeSweep } from "../test/sweepFixtures";

beforeEach(() => FakeWebSocket.reset());
afterEach(() => vi.unstubAllGlobals());

const LAB: Cluster = makeCluster("lab", { gpu_memory: undefined });

const node = (name: string, partitions: string[], used: number[]) => ({
  name,
  state: used.length ? "mixed" : "idle",
  partitions,
  cpus: 4,
  cpus_allocated: 0,
  memory_mb: 4096,
  memory_allocated_mb: 0,
  gpus: [{ type: "h100", count: 2, used: used.length, used_indices: used }],
});

// two nodes of 2 h100 in gpu (one GPU in use), and a third only in gpu-long
const LAB_STATE: ClusterState = {
  name: "lab",
  reachable: true,
  cause: null,
  nodes: [node("n1", ["gpu"], [0]), node("n2", ["gpu", "gpu-long"], []), node("n3", ["gpu-long"], [0, 1])],
  read_in_s: 0.05,
  read_at: "2026-11-27T10:00:00Z",
};

function setup(routes: Record<string, Handler> = {}, route = "/new") {
  return renderNewJob(
    {
      "GET /api/kinds": () => json([makeSaeKind()]),
      "GET /api/kinds/sae": () => json(makeSaeKind()),
      "POST /api/estimate": () => json(ONE_GIB_ESTIMATE),
      "POST /api/gpus/recommend": () => json(ALL_BUSY),
      "GET /api/gpus": () => json([]),
      "GET /api/clusters": () => json([LAB]),
      "GET /api/clusters/lab/state": () => json(LAB_STATE),
      "POST /api/jobs": () => json(makeJob({ id: 42, status: "queued", devices: [], cluster: "lab" }), 201),
      ...routes,
    },
    { route, devices: [makeGpu({ index: 0, uuid: "G0" })] },
  );
}

const created = (api: ReturnType<typeof setup>) => api.requests.filter((r) => r.method === "POST" && r.path === "/api/jobs");

async function chooseLab() {
  await userEvent.selectOptions(await screen.findByLabelText("where"), "lab");
  return screen.findByTestId("cluster-picker");
}

describe("NewJob on a Slurm cluster", () => {
  it("offers GPUDeck's nodes by default, and each connected cluster by name", async () => {
    const api = setup();
    const where = await screen.findByLabelText("where");
    expect(where).toHaveValue("");
    expect(
      within(where)
        .getAllByRole("option")
        .map((o) => o.textContent),
    ).toEqual(["GPUDeck's nodes", "Slurm cluster lab"]);
    // the device picker is today's, and nothing asks Slurm until the cluster is chosen
    expect(screen.getByTestId("use-recommended")).toBeInTheDocument();
    expect(screen.queryByTestId("cluster-picker")).toBeNull();
    expect(api.requests.some((r) => r.path.startsWith("/api/clusters/lab"))).toBe(false);
  });

  it("with a cluster chosen hides the devices and says what the partition has, read from Slurm", async () => {
    const api = setup();
    const picker = await chooseLab();
    expect(screen.queryByTestId("use-recommended")).toBeNull();
    expect(screen.queryByLabelText("device count")).toBeNull();
    expect(within(picker).getByText("Slurm places the job")).toBeInTheDocument();
    expect(await within(picker).findByTestId("cluster-facts")).toHaveTextContent(
      "2 nodes with 2 GPUs each (h100) · 3 of 4 GPUs free, at most 2 free on one node",
    );
    expect(api.requests.some((r) => r.path === "/api/clusters/lab/state")).toBe(true);
    expect(within(picker).getByLabelText("partition")).toHaveValue("gpu");
    await userEvent.selectOptions(within(picker).getByLabelText("partition"), "gpu-long");
    expect(within(picker).getByTestId("cluster-facts")).toHaveTextContent("2 nodes with 2 GPUs each (h100) · 2 of 4 GPUs free");
    // the live memory estimate still shows
    expect(screen.getByTestId("estimate-bytes")).toBeInTheDocument();
  });

  it("asks which of the partition's GPU types fit the live estimate, and says the one GPUDeck will request", async () => {
    const asked: URLSearchParams[] = [];
    setup({
      "GET /api/clusters/lab/gpu-types": (request) => {
        const query = new URL(request.url).searchParams;
        asked.push(query);
        const estimate = Number(query.get("estimate_bytes"));
        const type = { type: "h100", memory_bytes: 80 * 1024 ** 3, usable_bytes: 76 * 1024 ** 3, count: 4, fits: true };
        return json({
          cluster: "lab",
          partition: query.get("partition"),
          estimate_bytes: estimate,
          reachable: true,
          cause: null,
          types: [type],
          gpu_type: null,
          refusal: null,
        });
      },
    });
    const picker = await chooseLab();
    const row = await within(picker).findByTestId("gpu-type");
    expect(row).toHaveTextContent("h100");
    expect(within(picker).getByTestId("gpu-type-request")).toHaveTextContent("GPUDeck will request: any type · every type fits");
    // the estimate the form shows, per device, for the chosen partition
    await waitFor(() => expect(asked.some((q) => q.get("estimate_bytes") === String(1024 ** 3))).toBe(true));
    await userEvent.selectOptions(within(picker).getByLabelText("partition"), "gpu-long");
    await waitFor(() => expect(asked.at(-1)?.get("partition")).toBe("gpu-long"));
  });

  it("submits the cluster, partition, count and nodes, never devices", async () => {
    const api = setup();
    const picker = await chooseLab();
    await within(picker).findByTestId("cluster-facts");
    fireEvent.change(within(picker).getByLabelText("GPU count"), { target: { value: "4" } });
    fireEvent.change(within(picker).getByLabelText("nodes"), { target: { value: "2" } });
    await waitFor(() => expect(screen.getByTestId("submit")).toBeEnabled());
    await userEvent.click(screen.getByTestId("submit"));
    await screen.findByTestId("elsewhere");
    const [sent] = created(api);
    expect(sent?.body).toMatchObject({ kind: "sae", cluster: "lab", partition: "gpu", count: 4, nodes: 2 });
    expect(sent?.body).not.toHaveProperty("devices");
    expect(sent?.body).not.toHaveProperty("node");
    // the estimate was asked for the job's 4 ranks
    const estimates = api.requests.filter((r) => r.path === "/api/estimate");
    expect(estimates.at(-1)?.body).toMatchObject({ world_size: 4 });
  });

  it("says before submitting when a node of the partition cannot hold the count, and blocks Start", async () => {
    const api = setup();
    const picker = await chooseLab();
    await within(picker).findByTestId("cluster-facts");
    fireEvent.change(within(picker).getByLabelText("GPU count"), { target: { value: "3" } });
    expect(await within(picker).findByTestId("count-error")).toHaveTextContent(
      "3 GPUs on one node: partition gpu's nodes have at most 2 each; spread it, e.g. nodes 2",
    );
    expect(screen.getByTestId("submit")).toBeDisabled();
    fireEvent.change(within(picker).getByLabelText("nodes"), { target: { value: "2" } });
    expect(within(picker).getByTestId("nodes-error")).toHaveTextContent("3 GPUs do not split evenly over 2 nodes");
    expect(created(api)).toHaveLength(0);
  });

  it("shows the API's refusal at the field it names, and clears it once the field changes", async () => {
    const refusal = {
      detail: [{ loc: ["body", "partition"], msg: "Slurm has no partition 'gpu' (it has debug)", type: "invalid_input" }],
    };
    setup({ "POST /api/jobs": () => json(refusal, 422) });
    const picker = await chooseLab();
    await within(picker).findByTestId("cluster-facts");
    await waitFor(() => expect(screen.getByTestId("submit")).toBeEnabled());
    await userEvent.click(screen.getByTestId("submit"));
    expect(await within(picker).findByTestId("partition-error")).toHaveTextContent("Slurm has no partition 'gpu' (it has debug)");
    expect(screen.queryByRole("alert")).toBeNull(); // not repeated among the page's other messages
    await userEvent.selectOptions(within(picker).getByLabelText("partition"), "gpu-long");
    expect(within(picker).queryByTestId("partition-error")).toBeNull();
  });

  it("says the cluster did not answer, with the cause, and still lets the job be submitted", async () => {
    const down: ClusterState = {
      name: "lab",
      reachable: false,
      cause: "scontrol did not answer within 1 s",
      nodes: [],
      read_in_s: 1.0,
      read_at: "2026-11-27T10:00:00Z",
    };
    const api = setup({ "GET /api/clusters/lab/state": () => json(down) });
    const picker = await chooseLab();
    expect(await within(picker).findByTestId("cluster-unreachable")).toHaveTextContent(
      "cluster did not answer: scontrol did not answer within 1 s",
    );
    await waitFor(() => expect(screen.getByTestId("submit")).toBeEnabled());
    await userEvent.click(screen.getByTestId("submit"));
    await screen.findByTestId("elsewhere");
    expect(created(api)[0]?.body).toMatchObject({ cluster: "lab", partition: "gpu", count: 1 });
  });

  it("back on GPUDeck's nodes, submits devices by count as before", async () => {
    const api = setup();
    await chooseLab();
    await userEvent.selectOptions(screen.getByLabelText("where"), "");
    expect(screen.queryByTestId("cluster-picker")).toBeNull();
    expect(screen.getByTestId("use-recommended")).toBeInTheDocument();
    await waitFor(() => expect(screen.getByTestId("submit")).toBeEnabled());
    await userEvent.click(screen.getByTestId("submit"));
    await screen.findByTestId("elsewhere");
    const body = created(api)[0]?.body;
    expect(body).toMatchObject({ count: 1 });
    for (const key of ["cluster", "partition"]) expect(body).not.toHaveProperty(key);
  });

  it("sends a sweep's members to the cluster, and shows its refusal at the field", async () => {
    const refusal = { detail: [{ loc: ["body", "nodes"], msg: "2 nodes with 1 GPUs each: partition gpu has 1", type: "invalid_input" }] };
    let answer = json(refusal, 422);
    const api = setup({ "POST /api/sweeps": () => answer }, "/new?sweep=1");
    await screen.findByTestId("estimate-bytes");
    await userEvent.selectOptions(screen.getByLabelText("sweep field 1"), "k");
    await userEvent.type(screen.getByLabelText("sweep values 1"), "2, 4");
    const picker = await chooseLab();
    await within(picker).findByTestId("cluster-facts");
    fireEvent.change(within(picker).getByLabelText("GPU count"), { target: { value: "2" } });
    fireEvent.change(within(picker).getByLabelText("nodes"), { target: { value: "2" } });
    await waitFor(() => expect(screen.getByTestId("submit")).toBeEnabled());
    await userEvent.click(screen.getByTestId("submit"));
    expect(await within(picker).findByTestId("nodes-error")).toHaveTextContent("2 nodes with 1 GPUs each: partition gpu has 1");
    answer = json(makeSweep(2), 201);
    await userEvent.click(screen.getByTestId("submit"));
    await screen.findByTestId("elsewhere");
    const sent = api.requests.filter((r) => r.path === "/api/sweeps").at(-1)?.body as { job: Record<string, unknown> };
    expect(sent.job).toMatchObject({ kind: "sae", cluster: "lab", partition: "gpu", count: 2, nodes: 2 });
    expect(sent.job).not.toHaveProperty("devices");
    expect(created(api)).toHaveLength(0);
  }, 15_000);

  it("runs a cluster job again on the same cluster, partition, count and nodes", async () => {
    const slurm = { partition: "gpu-long", nodes_requested: 2, attempts: 1, unknown: false };
    const earlier = makeJob({ id: 12, status: "succeeded", devices: [], world_size: 4, cluster: "lab", slurm_job_id: "77", slurm });
    setup({ "GET /api/jobs/12": () => json(earlier) }, "/new?kind=sae&from=12");
    const picker = await screen.findByTestId("cluster-picker");
    expect(screen.getByLabelText("where")).toHaveValue("lab");
    expect(within(picker).getByLabelText("partition")).toHaveValue("gpu-long");
    expect(within(picker).getByLabelText("GPU count")).toHaveValue(4);
    expect(within(picker).getByLabelText("nodes")).toHaveValue(2);
    expect(screen.getByTestId("prefilled-note")).toHaveTextContent("4 GPU(s) on Slurm cluster lab");
  });

  it("shows no Where choice when no cluster is connected", async () => {
    setup({ "GET /api/clusters": () => json([]) });
    await screen.findByTestId("use-recommended");
    await screen.findByTestId("estimate-bytes");
    expect(screen.queryByTestId("where")).toBeNull();
  });
});
