import { act, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ClusterState } from "../client/clusterTypes";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeCluster, makeGpu, makeSample } from "../test/fixtures";
import { json, renderPage, stubApi } from "../test/render";
import { Dashboard } from "./Dashboard";

const gpus = (used: number[]) => [{ type: "h100", count: 2, used: used.length, used_indices: used }];
const sae = { job_id: 12, name: "sae-lr", owner: "ada", slurm_job_id: "4471", gpus_per_node: 2 };
const node = (name: string, state: string, used: number[], jobs = [sae].slice(0, 0)) => ({
  name,
  state,
  partitions: ["gpu"],
  cpus: 8,
  cpus_allocated: 0,
  memory_mb: 4096,
  memory_allocated_mb: 0,
  gpus: gpus(used),
  jobs,
});

const now = new Date().toISOString();
const LAB: ClusterState = {
  name: "lab",
  reachable: true,
  cause: null,
  nodes: [node("n1", "allocated", [0, 1], [sae]), node("n2", "mixed", [1]), node("n3", "idle+drain", [])],
  read_in_s: 0.04,
  read_at: now,
  answered_at: now,
  unreachable_since: null,
};
const DOWN: ClusterState = {
  name: "far",
  reachable: false,
  cause: "ssh to gpudeck@login.far did not answer within 1.0 s",
  nodes: [],
  read_in_s: 1.0,
  read_at: "2026-11-29T10:05:00Z",
  answered_at: "2026-11-29T09:58:00Z",
  unreachable_since: "2026-11-29T10:00:00Z",
};

let lab: ClusterState = LAB;
let api: ReturnType<typeof stubApi>;
beforeEach(() => {
  FakeWebSocket.reset();
  lab = LAB;
  api = stubApi({
    "GET /api/gpus": () => json([]),
    "GET /api/clusters": () =>
      json([
        makeCluster("lab", { partitions: ["gpu"] }),
        makeCluster("far", { partitions: ["gpu"], access: "ssh", ssh_host: "gpudeck@login.far", ssh_port: 22 }),
      ]),
    "GET /api/clusters/lab/state": () => json(lab),
    "GET /api/clusters/far/state": () => json(DOWN),
  });
  vi.stubGlobal("fetch", api.fetchMock);
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

function group(name: string): HTMLElement {
  const found = screen.getAllByTestId("cluster-group").find((g) => g.dataset.cluster === name);
  if (!found) throw new Error(`no group ${name}`);
  return found;
}

function nodeCard(name: string): HTMLElement {
  const found = within(group("lab"))
    .getAllByTestId("cluster-node")
    .find((n) => n.dataset.node === name);
  if (!found) throw new Error(`no node ${name}`);
  return found;
}

describe("Dashboard: Slurm clusters", () => {
  it("groups each cluster after GPUDeck's own nodes, labelled, with its GPUs in use or free and who holds them", async () => {
    renderPage(<Dashboard />);
    const socket = FakeWebSocket.instances.find((s) => s.url.includes("/ws/telemetry"))!;
    act(() => {
      socket.open();
      socket.receive({ type: "snapshot", samples: [makeSample(0, [makeGpu({ uuid: "A" })], "ws1")] });
    });
    await waitFor(() => expect(within(group("lab")).getAllByTestId("cluster-node")).toHaveLength(3));
    // own nodes first, named now that a cluster follows; then each cluster
    const sections = [...document.querySelectorAll("section.node-group")];
    expect(sections.map((s) => (s as HTMLElement).dataset.cluster ?? "own")).toEqual(["own", "lab", "far"]);
    expect(sections[0]).toHaveTextContent("ws1");

    const labGroup = group("lab");
    expect(labGroup).toHaveTextContent("Slurm cluster");
    expect(within(labGroup).getByTestId("cluster-access")).toHaveTextContent("access local");
    expect(within(labGroup).getByTestId("cluster-read")).toHaveTextContent(/read \d+s ago/);
    expect(within(labGroup).getByTestId("cluster-note")).toHaveTextContent(
      "Utilization, memory and temperature of cluster GPUs are not measured by GPUDeck",
    );
    // no telemetry figures, no fake zeros
    expect(within(labGroup).queryAllByTestId("gpu-card")).toHaveLength(0);
    expect(labGroup).not.toHaveTextContent("0%");

    // n1: both GPUs GPUDeck job 12's, linked from each cell
    const n1 = nodeCard("n1");
    expect(within(n1).getByTestId("node-state")).toHaveTextContent("allocated");
    const n1Gpus = within(n1).getAllByTestId("cluster-gpu");
    expect(n1Gpus.map((g) => g.dataset.inUse)).toEqual(["true", "true"]);
    expect(within(n1Gpus[0]!).getByRole("link", { name: "sae-lr" })).toHaveAttribute("href", "/jobs/12");
    // n2: GPU 1 held by a Slurm job that is not GPUDeck's; GPU 0 free
    const n2Gpus = within(nodeCard("n2")).getAllByTestId("cluster-gpu");
    expect(n2Gpus.map((g) => g.textContent)).toEqual(["GPU 0 h100free", "GPU 1 h100other Slurm job"]);
    // n3: draining, both free
    expect(within(nodeCard("n3")).getByTestId("node-state")).toHaveClass("bad");
    expect(
      within(nodeCard("n3"))
        .getAllByTestId("cluster-gpu")
        .map((g) => g.dataset.inUse),
    ).toEqual(["false", "false"]);
  });

  it("says since when a cluster has not answered, and when it last did", async () => {
    renderPage(<Dashboard />);
    const far = await waitFor(() => group("far"));
    expect(within(far).getByTestId("cluster-access")).toHaveTextContent("access ssh gpudeck@login.far");
    const since = await within(far).findByTestId("cluster-unreachable-since");
    expect(since).toHaveTextContent(`unreachable since ${new Date("2026-11-29T10:00:00Z").toLocaleTimeString()}`);
    const banner = within(far).getByTestId("cluster-board-unreachable");
    expect(banner).toHaveTextContent("The login node did not answer (ssh to gpudeck@login.far did not answer within 1.0 s)");
    expect(banner).toHaveTextContent(`It last answered at ${new Date("2026-11-29T09:58:00Z").toLocaleTimeString()}`);
    expect(within(far).queryAllByTestId("cluster-node")).toHaveLength(0);
  });

  it("lists several holders of one node by count, and follows the cluster live", async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    lab = { ...LAB, nodes: [node("n1", "mixed", [0], [{ ...sae, gpus_per_node: 1 }])] };
    renderPage(<Dashboard />);
    await waitFor(() => expect(within(nodeCard("n1")).getAllByTestId("cluster-gpu")[0]).toHaveTextContent("sae-lr"));

    // the next read: another Slurm job took GPU 1 too
    lab = { ...LAB, nodes: [node("n1", "allocated", [0, 1], [{ ...sae, gpus_per_node: 1 }])] };
    await act(() => vi.advanceTimersByTimeAsync(10000));
    await waitFor(() => expect(within(nodeCard("n1")).getByTestId("node-state")).toHaveTextContent("allocated"));
    const cells = within(nodeCard("n1")).getAllByTestId("cluster-gpu");
    expect(cells.map((c) => c.textContent)).toEqual(["GPU 0 h100in use", "GPU 1 h100in use"]);
    const holders = within(nodeCard("n1")).getAllByTestId("cluster-holder");
    expect(holders.map((h) => h.textContent)).toEqual([
      "1 GPU: sae-lr #12 · ada · Slurm 4471",
      "1 GPU: other Slurm job (allocations that are not GPUDeck's)",
    ]);
    expect(api.requests.filter((r) => r.path === "/api/clusters/lab/state").length).toBeGreaterThanOrEqual(2);
  });
});
