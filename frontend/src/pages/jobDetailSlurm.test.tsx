import { screen, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Job } from "../client/types";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeJob, makeSaeKind } from "../test/fixtures";
import { renderJobPage } from "../test/jobPage";
import { json, renderPage, stubApi } from "../test/render";
import { Jobs } from "./Jobs";

beforeEach(() => {
  FakeWebSocket.reset();
  vi.stubGlobal("WebSocket", FakeWebSocket);
});
afterEach(() => vi.unstubAllGlobals());

const polledAt = new Date(Date.now() - 4000).toISOString();

/** A job on cluster lab that Slurm holds pending for resources, polled 4 s ago. */
function pendingOnLab(overrides: Partial<Job> = {}): Job {
  return makeJob({
    id: 9,
    status: "queued",
    devices: [],
    node: "lab", // a cluster job's node is its cluster
    started_at: null,
    cluster: "lab",
    slurm_job_id: "123",
    slurm: {
      partition: "gpu",
      nodes_requested: 2,
      state: "PENDING",
      reason_code: "devices_busy",
      reason: "Slurm: waiting for resources (Resources)",
      nodes: null,
      unknown: false,
      polled_at: polledAt,
      attempts: 0,
    },
    ...overrides,
  });
}

describe("a job on a Slurm cluster", () => {
  it("has a Slurm card: cluster, Slurm's id and state, partition, nodes, attempts, and while pending Slurm's reason", async () => {
    renderJobPage(pendingOnLab());
    const card = await screen.findByTestId("slurm-card");
    expect(within(card).getByTestId("slurm-cluster")).toHaveTextContent("lab");
    expect(within(card).getByTestId("slurm-job-id")).toHaveTextContent("123");
    expect(within(card).getByTestId("slurm-state")).toHaveTextContent("PENDING");
    expect(within(card).getByTestId("slurm-partition")).toHaveTextContent("gpu");
    expect(within(card).getByTestId("slurm-nodes")).toHaveTextContent("2 requested");
    expect(within(card).getByTestId("slurm-attempts")).toHaveTextContent("0");
    expect(within(card).getByTestId("slurm-reason")).toHaveTextContent("Slurm: waiting for resources (Resources) (devices_busy)");
    expect(within(card).queryByTestId("slurm-unknown")).toBeNull();
    expect(within(card).getByText(/^read \d+s ago$/)).toBeInTheDocument();
  });

  it("once running shows Slurm's node list and the attempt, and no reason", async () => {
    const slurm = { ...pendingOnLab().slurm!, state: "RUNNING", reason: null, reason_code: null, nodes: "n[1-2]", attempts: 2 };
    renderJobPage(pendingOnLab({ status: "running", started_at: polledAt, slurm }));
    const card = await screen.findByTestId("slurm-card");
    expect(within(card).getByTestId("slurm-state")).toHaveTextContent("RUNNING");
    expect(within(card).getByTestId("slurm-nodes")).toHaveTextContent("n[1-2]");
    expect(within(card).getByTestId("slurm-attempts")).toHaveTextContent("2");
    expect(within(card).queryByTestId("slurm-reason")).toBeNull();
  });

  it("says Slurm did not answer, with the cause, keeping its last word", async () => {
    const slurm = { ...pendingOnLab().slurm!, state: "RUNNING", unknown: true, reason: "squeue: slurm_load_jobs error: Socket timed out" };
    renderJobPage(pendingOnLab({ status: "running", slurm }));
    const card = await screen.findByTestId("slurm-card");
    expect(within(card).getByTestId("slurm-unknown")).toHaveTextContent(
      "Slurm did not answer (squeue: slurm_load_jobs error: Socket timed out)",
    );
    expect(within(card).getByTestId("slurm-state")).toHaveTextContent("RUNNING");
  });

  it("not yet submitted to Slurm says so", async () => {
    renderJobPage(pendingOnLab({ slurm_job_id: null, slurm: { partition: "gpu", nodes_requested: 1, attempts: 0, unknown: false } }));
    const card = await screen.findByTestId("slurm-card");
    expect(within(card).getByTestId("slurm-job-id")).toHaveTextContent("not submitted yet");
    expect(within(card).getByTestId("slurm-nodes")).toHaveTextContent("1 requested");
  });

  it("a job on GPUDeck's own nodes has no Slurm card", async () => {
    renderJobPage(makeJob({ id: 9 }));
    await screen.findByTestId("job-duration");
    expect(screen.queryByTestId("slurm-card")).toBeNull();
  });

  it("the jobs list names its cluster where own jobs list their GPUs", async () => {
    const own = makeJob({ id: 3 });
    const api = stubApi({
      "GET /api/jobs": () => json({ items: [pendingOnLab(), own], total: 2 }),
      "GET /api/kinds": () => json([makeSaeKind()]),
    });
    vi.stubGlobal("fetch", api.fetchMock);
    renderPage(<Jobs />, { path: "/jobs", route: "/jobs" });
    const rows = await screen.findAllByTestId("job-row");
    const [onLab, onOwn] = rows;
    expect(onLab).toHaveTextContent("lab (Slurm)");
    expect(onOwn).not.toHaveTextContent("(Slurm)");
    expect(onOwn).toHaveTextContent("0, 1");
  });
});
