import { screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeJob, makeSaeKind } from "../test/fixtures";
import kinds from "../test/kindSchemas.json";
import { renderNewJob } from "../test/newJobPage";
import { json, renderPage, stubApi } from "../test/render";
import { JobDetail } from "./JobDetail";

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
    renderNewJob(
      {
        "GET /api/jobs/7/follow-up": () => json(followUp),
        "GET /api/kinds": () => json([makeSaeKind()]),
        "GET /api/kinds/sae": () => json(makeSaeKind()),
        "GET /api/gpus": () => json([]),
      },
      { route: "/new?kind=sae&after=7" },
    );
    expect(await screen.findByLabelText("d_in", { exact: true })).toHaveValue("48");
    const path = document.querySelector('[data-field="dataset.path"] input');
    expect(path).toHaveValue("acts/x/activations.safetensors");
    expect(await screen.findByLabelText("depends on")).toHaveValue("7"); // shown: not left folded away
    expect(screen.getByTestId("follow-up-note")).toHaveTextContent("waits for it to succeed");
  });
});

/** The `sae_eval` kind as GET /api/kinds/sae_eval describes it: its real schema, a histogram. */
const evalKind = {
  ...makeSaeKind(),
  name: "sae_eval",
  config_schema: kinds.sae_eval.config_schema,
  defaults: kinds.sae_eval.defaults,
  estimates_memory: false,
  searches_batch_size: false,
  reads_job_field: "source_job",
  charts: [
    {
      title: "Feature density",
      log_y: false,
      style: "bars" as const,
      x_label: "log10 firing frequency",
      series: [{ metric: "density_bin_00", label: "-6" }],
    },
  ],
  summary_metrics: [
    { metric: "explained_variance", label: "explained var." },
    { metric: "dead_pct", label: "dead % (never fired on the rows)" },
  ],
};
const evalMetrics = {
  items: [{ step: 300, metrics: { explained_variance: 0.5806, dead_pct: 1.25, density_bin_00: 4 }, created_at: "2026-01-01T00:00:00Z" }],
  last_step: 300,
};

describe("Evaluate a checkpoint", () => {
  it("is offered on a cancelled SAE job, whose evaluations are listed on its page", async () => {
    const sae = makeJob({ status: "cancelled" });
    const evaluation = makeJob({ id: 9, kind: "sae_eval", name: "eval of job 7", status: "succeeded" });
    // the checkpoint it left is what the evaluation scores (none: nothing is offered)
    const checkpoint = {
      step: 300,
      path: "x",
      size_bytes: 1,
      loss: 0.5,
      created_at: new Date().toISOString(),
      files: [],
      node: "vm",
      location: null,
    };
    const api = stubApi({
      "GET /api/jobs/7": () => json(sae),
      "GET /api/kinds/sae": () => json({ ...makeSaeKind(), offers_follow_up: true }),
      "GET /api/kinds/sae_eval": () => json(evalKind),
      "GET /api/jobs/9/metrics": () => json(evalMetrics),
      "GET /api/jobs/7/metrics": () => json({ items: [], last_step: null }),
      "GET /api/jobs/7/checkpoints": () => json([checkpoint]),
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
    expect(row).toHaveTextContent("#9 eval of job 7");
    expect(row?.querySelector("a")).toHaveAttribute("href", "/jobs/9");
    // the step it scored and its kind's first two figures, from its metrics
    await waitFor(() => expect(screen.getByTestId("follow-up-step")).toHaveTextContent("300"));
    const [variance, dead] = screen.getAllByTestId("follow-up-figure");
    expect(variance).toHaveTextContent("0.581");
    expect(dead).toHaveTextContent("1.3"); // percentages to one decimal
    expect(screen.getByTestId("follow-ups")).toHaveTextContent("explained var.");
    expect(screen.getByTestId("follow-ups")).toHaveTextContent("dead % (never fired on the rows)");
  });

  it("says on the evaluation's page which job and step it scored, without a loss column", async () => {
    const evaluation = makeJob({ id: 9, kind: "sae_eval", name: "eval of job 7", status: "succeeded", config: { source_job: 7 } });
    const api = stubApi({
      "GET /api/jobs/9": () => json(evaluation),
      "GET /api/jobs/7": () => json(makeJob({ name: "first-sae" })),
      "GET /api/kinds/sae_eval": () => json(evalKind),
      "GET /api/jobs/9/metrics": () => json(evalMetrics),
      "GET /api/jobs/9/logs": () => new Response("", { status: 200, headers: { "Content-Type": "text/plain" } }),
      "GET /api/jobs/9/checkpoints": () =>
        json([{ step: 300, loss: null, files: [], size_bytes: 10, created_at: "2026-01-01T00:00:00Z", node: "node-a", location: null }]),
      "GET /api/gpus": () => json([]),
    });
    vi.stubGlobal("fetch", api.fetchMock);
    renderPage(<JobDetail />, { path: "/jobs/:id", route: "/jobs/9" });
    const source = await screen.findByTestId("source-job");
    await waitFor(() => expect(source).toHaveTextContent("job #7 first-sae, step 300"));
    expect(source.querySelector("a")).toHaveAttribute("href", "/jobs/7");
    expect(screen.getByText("dead % (never fired on the rows)").nextElementSibling).toHaveTextContent(/^1.3$/);
    expect(await screen.findByTestId("x-label")).toHaveTextContent("log10 firing frequency");
    const table = await screen.findByTestId("checkpoints");
    expect(table).not.toHaveTextContent("loss");
  });

  it("opens the evaluation form named after the job, with no int64 bounds", async () => {
    renderNewJob(
      {
        "GET /api/jobs/7/follow-up": () =>
          json({
            kind: "sae_eval",
            label: "Evaluate a checkpoint",
            config: { source_job: 7, dataset: { type: "heldout" } },
            depends_on: [],
            note: "it scores the job's newest checkpoint",
            name: "eval of job 7",
            checkpoint_field: "step",
          }),
        "GET /api/jobs/7": () => json(makeJob({ name: "first-sae" })),
        "GET /api/jobs/7/checkpoints": () =>
          json(
            [100, 300, 200].map((step) => ({
              step,
              loss: 1,
              files: [],
              size_bytes: 1,
              created_at: "2026-01-01T00:00:00Z",
              node: "node-a",
              location: null,
            })),
          ),
        "GET /api/kinds": () => json([makeSaeKind(), evalKind]),
        "GET /api/kinds/sae_eval": () => json(evalKind),
        "GET /api/gpus": () => json([]),
      },
      { route: "/new?kind=sae_eval&after=7" },
    );
    const name = await screen.findByLabelText("name");
    await waitFor(() => expect(name).toHaveValue("eval of job 7"));
    await waitFor(() =>
      expect(screen.getByTestId("follow-up-note")).toHaveTextContent(
        "Evaluate a checkpoint of job #7 first-sae. It scores the job's newest checkpoint",
      ),
    );
    const job = await screen.findByLabelText("SAE job");
    expect(job).toHaveValue("7");
    expect(document.querySelector('[data-field="source_job"]')).toHaveTextContent("running or ended)");
    expect(document.querySelector('[data-field="source_job"]')).not.toHaveTextContent("9223372036854776000");
    expect(document.querySelector('[data-field="step"]')).not.toHaveTextContent(" to ");
    // the step offers the source's checkpoints, newest first
    const offered = await screen.findByTestId("suggestions-step");
    expect([...offered.querySelectorAll("option")].map((o) => o.getAttribute("value"))).toEqual(["300", "200", "100"]);
    expect(screen.getByLabelText("checkpoint step")).toHaveAttribute("list", offered.id);
  });
});
