import { screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeJob, makeSaeKind } from "../test/fixtures";
import { json, renderPage, stubApi } from "../test/render";
import { JobDetail } from "./JobDetail";
import { NewJob } from "./NewJob";

beforeEach(() => {
  FakeWebSocket.reset();
  vi.stubGlobal("WebSocket", FakeWebSocket);
});
afterEach(() => vi.unstubAllGlobals());

const extractionKind = {
  ...makeSaeKind(),
  name: "activations",
  resumes_from: "output" as const,
  offers_follow_up: true,
  charts: [],
  summary_metrics: [],
};
const followUp = {
  kind: "sae",
  label: "Train an SAE on this output",
  config: { d_in: 48, dataset: { type: "file", path: "acts/x/activations.safetensors" } },
  depends_on: [7],
  note: "d_in is the model's hidden size",
};

function jobPage(status: "running" | "failed") {
  const job = makeJob({ kind: "activations", status });
  const noOutput = { detail: { code: "no_output", message: "job 7 failed: it wrote no output to follow" } };
  const api = stubApi({
    "GET /api/jobs/7": () => json(job),
    "GET /api/kinds/activations": () => json(extractionKind),
    "GET /api/jobs/7/metrics": () => json({ items: [], last_step: null }),
    "GET /api/jobs/7/logs": () => new Response("", { status: 200, headers: { "Content-Type": "text/plain" } }),
    "GET /api/jobs/7/checkpoints": () => json([]),
    "GET /api/jobs/7/map-progress": () =>
      json({
        num_chunks: null,
        chunks_done_before: 0,
        strategy: null,
        ranks: [],
        num_items: null,
        chunks_done: 0,
        items_done: 0,
        items_per_s: 0,
        eta_s: null,
      }),
    "GET /api/jobs/7/follow-up": () => (status === "failed" ? json(noOutput, 409) : json(followUp)),
    "GET /api/gpus": () => json([]),
  });
  vi.stubGlobal("fetch", api.fetchMock);
  renderPage(<JobDetail />, { path: "/jobs/:id", route: "/jobs/7" });
  return api;
}

describe("Train an SAE on this output", () => {
  it("is offered on an extraction that is running, and opens the SAE form for its output", async () => {
    jobPage("running");
    const link = await screen.findByTestId("follow-up");
    expect(link).toHaveTextContent("Train an SAE on this output");
    expect(link).toHaveAttribute("href", "/new?kind=sae&after=7");
  });

  it("is not offered on an extraction that failed: the API says it wrote no output", async () => {
    const api = jobPage("failed");
    await screen.findByTestId("run-again");
    await waitFor(() => expect(api.requests.filter((r) => r.path === "/api/jobs/7/follow-up")).toHaveLength(1));
    expect(screen.queryByTestId("follow-up")).toBeNull(); // asked once: a 409 is an answer
  });

  it("prefills d_in, the dataset and the dependency on the extraction", async () => {
    const api = stubApi({
      "GET /api/jobs/7/follow-up": () => json(followUp),
      "GET /api/kinds": () => json([makeSaeKind()]),
      "GET /api/kinds/sae": () => json(makeSaeKind()),
      "GET /api/gpus": () => json([]),
    });
    vi.stubGlobal("fetch", api.fetchMock);
    renderPage(<NewJob />, { path: "/new", route: "/new?kind=sae&after=7" });
    expect(await screen.findByLabelText("d_in", { exact: true })).toHaveValue("48");
    const path = document.querySelector('[data-field="dataset.path"] input');
    expect(path).toHaveValue("acts/x/activations.safetensors");
    expect(await screen.findByLabelText("depends on")).toHaveValue("7"); // shown: not left folded away
    expect(screen.getByTestId("follow-up-note")).toHaveTextContent("waits for it to succeed");
  });
});

describe("Evaluate a checkpoint", () => {
  it("is offered on a cancelled SAE job, whose evaluations are listed on its page", async () => {
    const sae = makeJob({ status: "cancelled" });
    const evaluation = makeJob({ id: 9, kind: "sae_eval", name: "sae_eval-job", status: "succeeded" });
    const api = stubApi({
      "GET /api/jobs/7": () => json(sae),
      "GET /api/kinds/sae": () => json({ ...makeSaeKind(), offers_follow_up: true }),
      "GET /api/jobs/7/metrics": () => json({ items: [], last_step: null }),
      "GET /api/jobs/7/checkpoints": () => json([]),
      "GET /api/jobs/7/follow-up": () =>
        json({ kind: "sae_eval", label: "Evaluate a checkpoint", config: { source_job: 7 }, depends_on: [], note: "" }),
      "GET /api/jobs/7/follow-ups": () => json([evaluation]),
      "GET /api/gpus": () => json([]),
    });
    vi.stubGlobal("fetch", api.fetchMock);
    renderPage(<JobDetail />, { path: "/jobs/:id", route: "/jobs/7" });
    const link = await screen.findByTestId("follow-up");
    expect(link).toHaveTextContent("Evaluate a checkpoint");
    expect(link).toHaveAttribute("href", "/new?kind=sae_eval&after=7");
    const [row] = await screen.findAllByTestId("follow-up-job");
    expect(row).toHaveTextContent("#9 sae_eval-job");
    expect(row?.querySelector("a")).toHaveAttribute("href", "/jobs/9");
  });
});
