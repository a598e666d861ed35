import { screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { JobKindInfo } from "../client/types";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeJob, makeSaeKind } from "../test/fixtures";
import { json, renderPage, stubApi } from "../test/render";
import { JobDetail } from "./JobDetail";

beforeEach(() => {
  FakeWebSocket.reset();
  vi.stubGlobal("WebSocket", FakeWebSocket);
});
afterEach(() => vi.unstubAllGlobals());

const at = new Date().toISOString();
type Job = ReturnType<typeof makeJob>;
type Rows = { step: number; metrics: Record<string, number> }[];

function jobPage(job: Job, { kind = makeSaeKind(), rows = [] as Rows, checkpoints = [] as unknown[], extra = {} } = {}) {
  const api = stubApi({
    [`GET /api/jobs/${job.id}`]: () => json(job),
    [`GET /api/kinds/${job.kind}`]: () => json(kind),
    [`GET /api/jobs/${job.id}/metrics`]: () =>
      json({ items: rows.map((r) => ({ ...r, created_at: at })), last_step: rows.at(-1)?.step ?? null }),
    [`GET /api/jobs/${job.id}/logs`]: () => new Response("", { status: 200, headers: { "Content-Type": "text/plain" } }),
    [`GET /api/jobs/${job.id}/checkpoints`]: () => json(checkpoints),
    "GET /api/gpus": () => json([]),
    ...extra,
  });
  vi.stubGlobal("fetch", api.fetchMock);
  renderPage(<JobDetail />, { path: "/jobs/:id", route: `/jobs/${job.id}` });
  return api;
}

const dd = (label: string) => screen.findByText((_, node) => node?.tagName === "DD" && node.previousSibling?.textContent === label);

describe("JobDetail figures", () => {
  it("says the steps a dead count is over: the 400 a 400-step run has, not 1,000", async () => {
    const kind = {
      ...makeSaeKind(),
      summary_metrics: [{ metric: "dead_features", label: "dead (training window)", window_metric: "dead_window_steps" }],
    };
    const job = makeJob({ status: "succeeded", finished_at: at, progress: { step: 400, total: 400 }, config: { steps: 400 } });
    jobPage(job, { kind, rows: [{ step: 400, metrics: { dead_features: 12, dead_window_steps: 400 } }] });
    expect(await dd("dead (training window)")).toHaveTextContent(/^12 \(last 400 steps\)$/);
  });

  it("an evaluation with loss recovered off says once that it was not measured, not four dashes", async () => {
    const needs = "loss_recovered";
    const kind: JobKindInfo = {
      ...makeSaeKind(),
      name: "sae_eval",
      summary_metrics: [
        { metric: "explained_variance", label: "explained var." },
        { metric: "loss_recovered", label: "loss recovered", needs },
        { metric: "lm_loss_clean", label: "LM loss (clean)", needs },
        { metric: "lm_loss_sae", label: "LM loss (SAE spliced in)", needs },
        { metric: "lm_loss_zero", label: "LM loss (hook zeroed)", needs },
      ],
    };
    const off = makeJob({
      kind: "sae_eval",
      status: "succeeded",
      finished_at: at,
      config: { source_job: 3, loss_recovered: { type: "off" } },
    });
    jobPage(off, { kind, rows: [{ step: 5, metrics: { explained_variance: 0.9 } }] });
    expect(await screen.findByTestId("not-measured")).toHaveTextContent("not measured: turn on loss recovered");
    expect(screen.getAllByTestId("not-measured")).toHaveLength(1);
    expect(screen.queryByText("LM loss (clean)", { selector: "dt" })).toBeNull();
    expect(screen.queryAllByText("—", { selector: "dd" })).toHaveLength(0);
  });

  it("an evaluation with loss recovered on shows its figures", async () => {
    const kind: JobKindInfo = {
      ...makeSaeKind(),
      name: "sae_eval",
      summary_metrics: [{ metric: "loss_recovered", label: "loss recovered", needs: "loss_recovered" }],
    };
    const on = makeJob({
      kind: "sae_eval",
      status: "succeeded",
      finished_at: at,
      config: { source_job: 3, loss_recovered: { type: "lm", model: "gpt2" } },
    });
    jobPage(on, { kind, rows: [{ step: 5, metrics: { loss_recovered: 0.875 } }] });
    expect(await dd("loss recovered")).toHaveTextContent("0.875");
    expect(screen.queryByTestId("not-measured")).toBeNull();
  });
});

describe("JobDetail of a job that has not run", () => {
  const follow = { kind: "sae_eval", label: "Evaluate a checkpoint", config: { source_job: 7 }, depends_on: [], note: "" };
  const checkpoint = { step: 50, path: "x", size_bytes: 1, loss: 0.5, created_at: at, files: [], node: "vm", location: null };

  it("a queued job draws no empty charts and offers no evaluation of checkpoints it cannot have", async () => {
    const queued = makeJob({ status: "queued", started_at: null, devices: [], progress: { step: 0, total: 100 } });
    const kind = { ...makeSaeKind(), offers_follow_up: true };
    const api = jobPage(queued, { kind, extra: { "GET /api/jobs/7/follow-up": () => json(follow) } });
    expect(await screen.findByTestId("charts-pending")).toHaveTextContent("Its charts fill in once it starts.");
    expect(screen.queryByTestId("loss-chart")).toBeNull();
    expect(screen.queryByText("no data yet")).toBeNull();
    await waitFor(() => expect(api.requests.some((r) => r.path === "/api/jobs/7/follow-up")).toBe(true));
    await waitFor(() => expect(api.requests.some((r) => r.path === "/api/jobs/7/checkpoints")).toBe(true));
    expect(screen.queryByTestId("follow-up")).toBeNull();
    expect(screen.getByTestId("run-again")).toBeInTheDocument();
  });

  it("a running job with a checkpoint offers its evaluation and draws its charts", async () => {
    const kind = { ...makeSaeKind(), offers_follow_up: true };
    jobPage(makeJob(), { kind, checkpoints: [checkpoint], extra: { "GET /api/jobs/7/follow-up": () => json(follow) } });
    expect(await screen.findByTestId("follow-up")).toHaveTextContent("Evaluate a checkpoint");
    expect(screen.getByTestId("loss-chart")).toBeInTheDocument();
    expect(screen.queryByTestId("charts-pending")).toBeNull();
  });
});

describe("JobDetail checkpoints", () => {
  it("a run no longer than the checkpoint interval says its one checkpoint is the final one", async () => {
    const short = makeJob({ config: { steps: 400, checkpoint_interval: 500 }, progress: { step: 120, total: 400 } });
    jobPage(short);
    expect(
      await screen.findByText(
        "None yet: the run (400 steps) is not longer than the interval (every 500), so rank 0 writes one checkpoint, the final one, at step 400.",
      ),
    ).toBeInTheDocument();
  });

  it("a longer run says its interval", async () => {
    jobPage(makeJob({ config: { steps: 2400, checkpoint_interval: 500 }, progress: { step: 120, total: 2400 } }));
    expect(await screen.findByText("None yet: rank 0 writes one every 500 steps.")).toBeInTheDocument();
  });
});
