import { screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { MapProgress } from "../client/types";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeJob, makeSaeKind } from "../test/fixtures";
import { json, renderPage, stubApi } from "../test/render";
import { JobDetail } from "./JobDetail";

beforeEach(() => {
  FakeWebSocket.reset();
  vi.stubGlobal("WebSocket", FakeWebSocket);
});
afterEach(() => vi.unstubAllGlobals());

const mapKind = { ...makeSaeKind(), name: "map", resumes_from: "output" as const, charts: [], summary_metrics: [] };

function page(job: ReturnType<typeof makeJob>, progress: MapProgress | (() => MapProgress), current = () => job, log = "") {
  const api = stubApi({
    [`GET /api/jobs/${job.id}`]: () => json(current()),
    "GET /api/kinds/map": () => json(mapKind),
    "GET /api/kinds/sae": () => json(makeSaeKind()),
    [`GET /api/jobs/${job.id}/metrics`]: () => json({ items: [], last_step: null }),
    [`GET /api/jobs/${job.id}/logs`]: () => new Response(log, { status: 200, headers: { "Content-Type": "text/plain" } }),
    [`GET /api/jobs/${job.id}/checkpoints`]: () => json([]),
    [`GET /api/jobs/${job.id}/map-progress`]: () => json(typeof progress === "function" ? progress() : progress),
    "GET /api/gpus": () => json([]),
  });
  vi.stubGlobal("fetch", api.fetchMock);
  renderPage(<JobDetail />, { path: "/jobs/:id", route: `/jobs/${job.id}` });
  return api;
}

/** Totals the tests below do not look at. */
const totals = { num_items: null, chunks_done: 0, items_done: 0, items_per_s: 0, eta_s: null };

const bar = (rank: number) => within(screen.getByTestId(`rank-${rank}`)).getByRole("progressbar");

describe("JobDetail of a map job", () => {
  it("shows each rank's chunks done of its share, and its items per second", async () => {
    page(makeJob({ kind: "map" }), {
      num_chunks: 12,
      chunks_done_before: 2,
      strategy: "balanced",
      ranks: [
        { rank: 0, chunks_done: 3, chunks_total: 5, items_done: 48, items_per_s: 12.5 },
        { rank: 1, chunks_done: 5, chunks_total: 5, items_done: 80, items_per_s: 20 },
      ],
      num_items: 192,
      chunks_done: 10,
      items_done: 128,
      items_per_s: 12.5,
      eta_s: 150,
    });
    await screen.findByTestId("rank-progress");
    expect(bar(0)).toHaveAttribute("aria-valuenow", "3");
    expect(bar(0)).toHaveAttribute("aria-valuemax", "5");
    expect(bar(1)).toHaveTextContent("5 / 5 · 100%");
    expect(screen.getByTestId("rank-0")).toHaveTextContent("48 items");
    expect(screen.getByText(/2 chunks written by an earlier run/)).toBeInTheDocument();
    expect(screen.getByText(/a map job's output chunks are its checkpoints/)).toBeInTheDocument();
    // the whole job: its chunks on the page's main bar, and the rate and ETA
    expect(screen.getByRole("progressbar", { name: "chunks written" })).toHaveTextContent("10 / 12 · 83%");
    expect(screen.getByTestId("map-total")).toHaveTextContent("10 / 12 chunks · 128 items · 12.5/s · ETA 2m 30s");
  });

  it("measures a dynamic rank against the chunks left for the run", async () => {
    page(makeJob({ kind: "map" }), {
      num_chunks: 10,
      chunks_done_before: 0,
      strategy: "dynamic",
      ranks: [{ rank: 0, chunks_done: 4, chunks_total: null, items_done: 4, items_per_s: 1 }],
      ...totals,
    });
    await screen.findByTestId("rank-progress");
    expect(bar(0)).toHaveAttribute("aria-valuemax", "10");
  });

  it("reads the ranks' last chunks again when the job ends, after the last poll", async () => {
    let job = makeJob({ kind: "map", status: "running" });
    let done = 3;
    page(
      job,
      () => ({
        num_chunks: 6,
        chunks_done_before: 0,
        strategy: "balanced",
        ranks: [{ rank: 0, chunks_done: done, chunks_total: 6, items_done: done * 4, items_per_s: 2 }],
        ...totals,
      }),
      () => job,
    );
    await screen.findByTestId("rank-progress");
    expect(bar(0)).toHaveAttribute("aria-valuenow", "3");
    done = 6;
    job = { ...job, status: "succeeded" };
    FakeWebSocket.latest().open();
    FakeWebSocket.latest().receive({ type: "status", rank: 0, ts: 1, data: { status: "succeeded" } });
    await waitFor(() => expect(bar(0)).toHaveAttribute("aria-valuenow", "6"));
  });

  it("after success says where the output went, with no '0.000/s · ETA 0s', and tqdm's lines collapse", async () => {
    const tqdm = "loading\r  0%|          | 0/4\r 50%|#####     | 2/4\r100%|##########| 4/4\nwrote 4 chunks\n";
    page(
      makeJob({ kind: "map", status: "succeeded", finished_at: "2026-01-01T00:01:00Z" }),
      {
        num_chunks: 4,
        chunks_done_before: 0,
        strategy: "balanced",
        ranks: [{ rank: 0, chunks_done: 4, chunks_total: 4, items_done: 32, items_per_s: 8 }],
        num_items: 32,
        chunks_done: 4,
        items_done: 32,
        items_per_s: 0,
        eta_s: 0,
        output_dir: "/srv/gpudeck/datasets/acts/run",
      },
      undefined,
      tqdm,
    );
    await screen.findByTestId("rank-progress");
    expect(screen.getByTestId("map-total")).toHaveTextContent(/^4 \/ 4 chunks · 32 items$/);
    expect(screen.getByTestId("map-output")).toHaveTextContent("output /srv/gpudeck/datasets/acts/run");
    await waitFor(() => expect(screen.getByTestId("log-tail").textContent).toBe("100%|##########| 4/4\nwrote 4 chunks\n"));
  });

  it("does not ask for ranks' chunks on a job that is not a map job", async () => {
    const api = page(makeJob(), { num_chunks: null, chunks_done_before: 0, strategy: null, ranks: [], ...totals });
    await screen.findByText("L0"); // the sae kind has loaded: the page knows it is no map job
    expect(api.requests.some((r) => r.path.endsWith("/map-progress"))).toBe(false);
    expect(screen.queryByTestId("rank-progress")).toBeNull();
  });
});
