import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Cluster, ClusterNode, ClusterState } from "../client/clusterTypes";
import { makeCluster } from "../test/fixtures";
import { json, renderPage, stubApi } from "../test/render";
import { Clusters } from "./Clusters";

afterEach(() => {
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

const ADMIN = { id: 1, name: "root", role: "admin", run_code: true, created_at: "2026-11-27T10:00:00Z" };
const USER = { ...ADMIN, id: 2, name: "alice", role: "user", run_code: false };
const cluster = (name: string) => makeCluster(name, { account: "ml" });

const node = (name: string, used: number[], jobs: ClusterNode["jobs"] = []) => ({
  name,
  state: used.length ? "mixed" : "idle",
  partitions: ["gpu"],
  cpus: 64,
  cpus_allocated: used.length * 8,
  memory_mb: 512000,
  memory_allocated_mb: used.length * 64000,
  gpus: [{ type: "h100", count: 4, used: used.length, used_indices: used }],
  jobs,
});

const LAB: ClusterState = {
  name: "lab",
  reachable: true,
  cause: null,
  nodes: [node("g1", [1, 2], [{ job_id: 12, name: "sae-lr", owner: "ada", slurm_job_id: "4471", gpus_per_node: 2 }]), node("g2", [])],
  read_in_s: 0.04,
  read_at: "2026-11-27T10:00:00Z",
};
const DOWN: ClusterState = {
  name: "old",
  reachable: false,
  cause: "scontrol did not answer within 1.5 s",
  nodes: [],
  read_in_s: 1.5,
  read_at: "2026-11-27T10:00:00Z",
};

function page(me: object, clusters: Cluster[], extra: Parameters<typeof stubApi>[0] = {}) {
  const api = stubApi({
    "GET /api/auth/me": () => json(me),
    "GET /api/clusters": () => json(clusters),
    "GET /api/clusters/lab/state": () => json(LAB),
    "GET /api/clusters/old/state": () => json(DOWN),
    ...extra,
  });
  vi.stubGlobal("fetch", api.fetchMock);
  renderPage(<Clusters />, { path: "/clusters", route: "/clusters" });
  return api;
}

describe("the clusters page", () => {
  it("names GPUDeck's jobs on each node, linked to their pages", async () => {
    page(USER, [cluster("lab")]);
    const lab = await screen.findByRole("region", { name: "cluster lab" });
    await waitFor(() => expect(within(lab).getByTestId("gpu-summary")).toBeInTheDocument());
    const row = within(lab).getByText("g1").closest("tr")!;
    const job = within(row).getByTestId("node-job");
    expect(job).toHaveTextContent("#12 sae-lr");
    expect(job).toHaveTextContent("ada · 2 GPUs · Slurm 4471");
    expect(within(job).getByRole("link")).toHaveAttribute("href", "/jobs/12");
    expect(within(lab).getByText("g2").closest("tr")!).toHaveTextContent("none of GPUDeck's");
  });

  it("lists each cluster with its nodes and the GPUs in use by GRES type, and an unreachable one with its cause", async () => {
    page(USER, [cluster("lab"), cluster("old")]);
    const lab = await screen.findByRole("region", { name: "cluster lab" });
    expect(within(lab).getByText(/partitions gpu, gpu-long · account ml · QOS —/)).toBeInTheDocument();
    await waitFor(() => expect(within(lab).getByTestId("gpu-summary")).toHaveTextContent("2 nodes · 2 of 8 GPUs in use"));
    const g1 = within(lab).getByText("g1").closest("tr")!;
    expect(within(g1).getByTestId("gres")).toHaveTextContent("h100: 2 of 4 in use (1, 2)");
    const g2 = within(lab).getByText("g2").closest("tr")!;
    expect(within(g2).getByTestId("gres")).toHaveTextContent("h100: 0 of 4 in use");
    expect(g2).toHaveTextContent("idle");

    const old = screen.getByRole("region", { name: "cluster old" });
    expect(await within(old).findByTestId("unreachable")).toHaveTextContent("Unreachable: scontrol did not answer within 1.5 s");
    expect(within(old).queryByTestId("cluster-nodes")).toBeNull();
    // a user sees the clusters, not the admin's tools
    expect(screen.queryByRole("form", { name: "connect a Slurm cluster" })).toBeNull();
    expect(screen.queryByRole("button", { name: "Remove" })).toBeNull();
  });

  it("lets an admin connect a cluster, sending the typed body, and shows an unknown partition under its field", async () => {
    let added = false;
    const api = page(ADMIN, [], {
      "POST /api/clusters": async (request) => {
        const body = (await request.json()) as { partitions: string[] };
        if (body.partitions.includes("nosuch")) {
          const msg = "no partition 'nosuch' on the cluster; it has gpu, gpu-long";
          return json({ detail: [{ loc: ["body", "partitions", 1], msg, type: "invalid_input" }] }, 422);
        }
        added = true;
        return json({ ...cluster("lab"), partitions_checked: false, check_note: "the cluster did not answer: scontrol timed out" }, 201);
      },
    });
    expect(await screen.findByTestId("no-clusters")).toHaveTextContent("Connect one below");
    const form = screen.getByRole("form", { name: "connect a Slurm cluster" });
    const user = userEvent.setup();
    await user.type(within(form).getByLabelText("name"), "lab");
    await user.type(within(form).getByLabelText("partitions"), "gpu, nosuch");
    await user.type(within(form).getByLabelText("shared directory"), "/scratch/gpudeck");
    await user.type(within(form).getByLabelText("account"), "ml");
    await user.click(within(form).getByRole("button", { name: "Connect" }));

    const error = await within(form).findByRole("alert");
    expect(error).toHaveAttribute("data-field", "partitions");
    expect(error).toHaveTextContent("no partition 'nosuch' on the cluster; it has gpu, gpu-long");
    expect(api.requests.find((r) => r.method === "POST")?.body).toEqual({
      name: "lab",
      kind: "slurm",
      partitions: ["gpu", "nosuch"],
      shared_dir: "/scratch/gpudeck",
      account: "ml",
      qos: null,
      access: "local",
      slurm_conf: null,
    });

    const partitions = within(form).getByLabelText("partitions");
    await user.clear(partitions);
    await user.type(partitions, "gpu");
    await user.click(within(form).getByRole("button", { name: "Connect" }));
    expect(await within(form).findByRole("status")).toHaveTextContent(
      "Cluster lab added; its partitions were not checked: the cluster did not answer: scontrol timed out",
    );
    expect(added).toBe(true);
    expect(within(form).queryByRole("alert")).toBeNull();
    // the list is read again after the add
    await waitFor(() => expect(api.requests.filter((r) => r.method === "GET" && r.path === "/api/clusters")).toHaveLength(2));
  });

  it("lets an admin connect a cluster over ssh, sending the login node's fields, and shows a refused key under its field", async () => {
    const api = page(ADMIN, [], {
      "POST /api/clusters": () => {
        const msg = "/srv/keys/lab is readable by its group or others (mode 0644); chmod 600 it";
        return json({ detail: [{ loc: ["body", "ssh_key_path"], msg, type: "invalid_input" }] }, 422);
      },
    });
    const form = await screen.findByRole("form", { name: "connect a Slurm cluster" });
    expect(within(form).queryByLabelText("login node")).toBeNull(); // local: no ssh fields
    const user = userEvent.setup();
    await user.selectOptions(within(form).getByLabelText("access"), "ssh");
    expect(within(form).getByText(/mount it there/)).toBeInTheDocument();
    await user.type(within(form).getByLabelText("name"), "lab");
    await user.type(within(form).getByLabelText("partitions"), "gpu");
    await user.type(within(form).getByLabelText("shared directory"), "/scratch/gpudeck");
    await user.type(within(form).getByLabelText("login node"), "gpudeck@login.lab");
    await user.type(within(form).getByLabelText("SSH port"), "2222");
    await user.type(within(form).getByLabelText("SSH key"), "/srv/keys/lab");
    await user.type(within(form).getByLabelText("known_hosts"), "/srv/keys/known_hosts");
    await user.click(within(form).getByRole("button", { name: "Connect" }));

    const error = await within(form).findByRole("alert");
    expect(error).toHaveAttribute("data-field", "ssh_key_path");
    expect(error).toHaveTextContent("readable by its group or others");
    expect(api.requests.find((r) => r.method === "POST")?.body).toEqual({
      name: "lab",
      kind: "slurm",
      partitions: ["gpu"],
      shared_dir: "/scratch/gpudeck",
      account: null,
      qos: null,
      access: "ssh",
      slurm_conf: null,
      ssh_host: "gpudeck@login.lab",
      ssh_port: 2222,
      ssh_key_path: "/srv/keys/lab",
      known_hosts_path: "/srv/keys/known_hosts",
    });
  });

  it("shows how each cluster is reached: local commands, or ssh to its login node", async () => {
    const ssh = { ...cluster("lab"), access: "ssh", ssh_host: "gpudeck@login.lab", ssh_port: 2222, known_hosts_path: "/srv/kh" };
    page(USER, [ssh, cluster("old")]);
    const lab = await screen.findByRole("region", { name: "cluster lab" });
    expect(within(lab).getByTestId("access")).toHaveTextContent("over ssh to gpudeck@login.lab:2222");
    const old = screen.getByRole("region", { name: "cluster old" });
    expect(within(old).getByTestId("access")).toHaveTextContent("local commands");
  });

  it("lets an admin disconnect a cluster after confirming", async () => {
    const api = page(ADMIN, [cluster("lab")], { "DELETE /api/clusters/lab": () => json(cluster("lab")) });
    const lab = await screen.findByRole("region", { name: "cluster lab" });
    const user = userEvent.setup();
    await user.click(within(lab).getByRole("button", { name: "Remove" }));
    expect(api.requests.some((r) => r.method === "DELETE")).toBe(false);
    await user.click(within(lab).getByRole("button", { name: "Disconnect" }));
    await waitFor(() => expect(api.requests.filter((r) => r.method === "DELETE").map((r) => r.path)).toEqual(["/api/clusters/lab"]));
  });
});
