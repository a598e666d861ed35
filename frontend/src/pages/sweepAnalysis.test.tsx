import { screen, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { SweepMember } from "../client/sweepTypes";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeSaeKind } from "../test/fixtures";
import { json, renderPage, stubApi } from "../test/render";
import { makeSweep } from "../test/sweepFixtures";
import { Sweep } from "./Sweep";

const SAE = {
  ...makeSaeKind(),
  summary_metrics: [
    { metric: "l0", label: "L0" },
    { metric: "explained_variance", label: "explained var." },
  ],
};

const LRS = [1e-4, 1e-3, 1e-2, 1e-1];

/** An lr sweep drawn log-uniform: 4 succeeded (the best at the largest lr), 1 running, 1 waiting. */
function lrSweep() {
  const base = makeSweep(6);
  const members: SweepMember[] = base.members.map((m, i) => ({
    ...m,
    params: { lr: LRS[i % 4] as number, k: 8 },
    // L0 against explained variance: steep gains up to L0 8, then flat (its knee: member 2)
    metrics:
      i < 5
        ? { l0: [2, 4, 8, 16, 5][i] as number, explained_variance: [0.2, 0.6, 0.9, 0.93, 0.7][i] as number }
        : ({} as Record<string, number>),
    status: i < 4 ? "succeeded" : i === 4 ? "running" : "queued",
    queue:
      i === 5
        ? {
            position: 1,
            reason_code: "sweep",
            reason: "sweep 2: 1 members running (max_parallel 1)",
            expected_start_at: new Date(Date.now() + 12 * 60_000).toISOString(),
            expected_start_from_time_limits: false,
          }
        : null,
  }));
  return {
    ...base,
    spec: { parameters: { random: { lr: { distribution: "log_uniform", low: 1e-4, high: 1e-1 } }, grid: { k: [8] } } },
    counts: { succeeded: 4, running: 1, queued: 1 },
    members,
  };
}

const ANALYSIS = {
  metric: "explained_variance",
  better: "max",
  measured: 4,
  running: 0,
  best_job_id: 103,
  best_index: 3,
  best_value: 0.65,
  importance: "|Spearman rank correlation| of each parameter with the metric over the members measured",
  parameters: [
    {
      path: "lr",
      numeric: true,
      log_axis: true,
      low: 1e-4,
      high: 1e-1,
      best_value: 0.1,
      edge: "top",
      rank_correlation: 1,
      note: "lr best at the top of the range searched (0.1 of 0.0001 to 0.1): widen it upward",
    },
    { path: "k", numeric: true, log_axis: false, low: 8, high: 8, best_value: 8, edge: null, rank_correlation: null, note: null },
  ],
};

beforeEach(() => {
  FakeWebSocket.reset();
  vi.spyOn(HTMLCanvasElement.prototype, "getContext").mockReturnValue(null); // jsdom draws nothing
});
afterEach(() => {
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

describe("the sweep page read against its settings", () => {
  it("plots explained variance against lr on a log axis, names the best member and says the range should widen", async () => {
    const api = stubApi({
      "GET /api/sweeps/2": () => json(lrSweep()),
      "GET /api/kinds/sae": () => json(SAE),
      "GET /api/sweeps/2/analysis": () => json(ANALYSIS),
    });
    vi.stubGlobal("fetch", api.fetchMock);
    renderPage(<Sweep />, { path: "/sweeps/:id", route: "/sweeps/2" });
    const best = await screen.findByTestId("best-member");
    expect(best).toHaveAttribute("data-job-id", "103");
    expect(within(best).getByRole("link")).toHaveAttribute("href", "/jobs/103");
    expect(screen.getByTestId("edge-callout")).toHaveTextContent("lr best at the top of the range searched");
    expect(screen.getByTestId("edge-callout")).toHaveTextContent("widen it upward");
    const card = screen.getByTestId("parameter-card");
    expect(within(card).getByLabelText("parameter")).toHaveValue("lr"); // the parameter that moves the metric most
    expect(within(card).getByLabelText("metric")).toHaveValue("explained_variance");
    const scatter = within(card).getByRole("img", { name: /against lr/ });
    expect(scatter).toHaveAttribute("data-x-log", "true");
    expect(scatter).toHaveAttribute("data-points", "5"); // 4 succeeded and the running one
    expect(scatter).toHaveAttribute("data-running", "1");
    expect(within(card).getByTestId("marked-point")).toHaveAttribute("data-job-id", "103");
    expect(within(card).getByTestId("importance")).toHaveTextContent("Spearman");
    expect(
      within(card)
        .getAllByTestId("importance-row")
        .map((r) => r.getAttribute("data-path")),
    ).toEqual(["lr"]);
    expect(within(card).getAllByTestId("parallel-line")).toHaveLength(5);
    const asked = api.requests.find((r) => r.path === "/api/sweeps/2/analysis");
    expect(asked).toBeDefined();
  });

  it("places a running member on the frontier, marked and off it, and tells the waiting member when it starts", async () => {
    const api = stubApi({
      "GET /api/sweeps/2": () => json(lrSweep()),
      "GET /api/kinds/sae": () => json(SAE),
      "GET /api/sweeps/2/analysis": () => json(ANALYSIS),
    });
    vi.stubGlobal("fetch", api.fetchMock);
    renderPage(<Sweep />, { path: "/sweeps/:id", route: "/sweeps/2" });
    const frontier = await screen.findByTestId("frontier-card");
    const scatter = within(frontier).getByRole("img");
    expect(scatter).toHaveAttribute("data-points", "5");
    expect(scatter).toHaveAttribute("data-running", "1");
    expect(within(frontier).getByTestId("running-legend")).toHaveTextContent("running (1)");
    expect(
      within(frontier)
        .getAllByTestId("frontier-point")
        .map((p) => p.textContent),
    ).not.toContain(expect.stringContaining("running"));
    const knee = within(frontier).getByTestId("marked-point");
    expect(knee).toHaveAttribute("data-job-id", "102");
    expect(knee).toHaveTextContent(/^◎ knee: member 2 \(lr=0.01, k=8\) → job #102, the frontier.s bend/);
    expect(screen.getByTestId("member-start")).toHaveTextContent("#1 in the queue · starts in ~12 min");
  });
});
