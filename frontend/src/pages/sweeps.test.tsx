import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeGpu, makeJob, makeSaeKind } from "../test/fixtures";
import { ALL_BUSY, ONE_GIB_ESTIMATE, renderNewJob } from "../test/newJobPage";
import { json, renderPage, stubApi } from "../test/render";
import { makeSweep } from "../test/sweepFixtures";
import { SweepMembership } from "../components/sweep/SweepMembership";
import { Sweep } from "./Sweep";
import { Sweeps } from "./Sweeps";

const SAE = {
  ...makeSaeKind(),
  summary_metrics: [
    { metric: "overall_loss", label: "loss" },
    { metric: "l0", label: "L0" },
    { metric: "explained_variance", label: "explained var." },
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

function sweepPage(sweep = makeSweep(4), extra: Parameters<typeof stubApi>[0] = {}) {
  const api = stubApi({
    "GET /api/sweeps/2": () => json(sweep),
    "GET /api/kinds/sae": () => json(SAE),
    ...extra,
  });
  vi.stubGlobal("fetch", api.fetchMock);
  renderPage(<Sweep />, { path: "/sweeps/:id", route: "/sweeps/2" });
  return api;
}

describe("the sweep page", () => {
  it("opens an SAE sweep on L0 against explained variance, its frontier monotone and linked to the members", async () => {
    sweepPage();
    const points = await screen.findAllByTestId("frontier-point");
    const xs = points.map((p) => Number(p.getAttribute("data-x")));
    const ys = points.map((p) => Number(p.getAttribute("data-y")));
    expect(xs).toEqual([...xs].sort((a, b) => a - b));
    expect(ys).toEqual([...ys].sort((a, b) => a - b));
    for (const p of points) expect(p.getAttribute("href")).toMatch(/^\/jobs\/10\d$/);
    expect(screen.getByLabelText("x metric")).toHaveValue("l0");
    expect(screen.getByLabelText("x better")).toHaveValue("min");
    expect(screen.getByLabelText("y metric")).toHaveValue("explained_variance");
    expect(screen.getByLabelText("y better")).toHaveValue("max");
    expect(within(screen.getByTestId("frontier-card")).getByRole("img")).toHaveAttribute("data-points", "4");
  });

  it("lists the members with their values, status linked to the job, and sorts and filters them", async () => {
    const sweep = makeSweep(8);
    sweep.members[5] = { ...sweep.members[5]!, status: "running", metrics: {} };
    sweep.counts = { succeeded: 7, running: 1 };
    sweepPage(sweep);
    const rows = await screen.findAllByTestId("member-row");
    expect(rows).toHaveLength(8);
    expect(within(rows[0]!).getByTestId("member-link")).toHaveAttribute("href", "/jobs/100");
    await userEvent.click(screen.getByRole("button", { name: "k" }));
    await userEvent.click(screen.getByRole("button", { name: "k ↑" }));
    const ks = screen.getAllByTestId("member-row").map((r) => r.querySelector('[data-column="param:k"]')?.textContent);
    expect(ks).toEqual(["16", "16", "8", "8", "4", "4", "2", "2"]);
    await userEvent.click(screen.getByLabelText(/running \(1\)/));
    expect(screen.getAllByTestId("member-row").map((r) => r.getAttribute("data-index"))).toEqual(["5"]);
  });

  it("draws every member's curves of a small sweep at first, then those ticked", async () => {
    const curve = () => json({ items: [{ step: 10, metrics: { overall_loss: 0.5 }, created_at: "x" }], last_step: 10 });
    const api = sweepPage(makeSweep(4), Object.fromEntries([100, 101, 102, 103].map((id) => [`GET /api/jobs/${id}/metrics`, curve])));
    const all = await screen.findByLabelText<HTMLInputElement>("draw every member shown");
    await waitFor(() => expect(all.checked).toBe(true));
    await waitFor(() => expect(api.requests.some((r) => r.path === "/api/jobs/103/metrics")).toBe(true));
    expect(await screen.findByTestId("curves-chart")).toBeInTheDocument();
    await userEvent.click(all); // none
    expect(await screen.findByText("Tick members in the table to draw their curves here.")).toBeInTheDocument();
    await userEvent.click(screen.getByLabelText("draw member 1"));
    expect(all.checked).toBe(false);
    expect(all.indeterminate).toBe(true);
    expect(await screen.findByTestId("curves-chart")).toBeInTheDocument();
  });

  it("opens on an axis that varies when L0 is the same for every member", async () => {
    const sweep = makeSweep(4);
    sweep.members = sweep.members.map((m) => ({ ...m, metrics: { ...m.metrics, l0: 5 } }));
    sweepPage(sweep);
    await screen.findAllByTestId("frontier-point");
    expect(screen.getByLabelText("x metric")).not.toHaveValue("l0");
    await userEvent.selectOptions(screen.getByLabelText("x metric"), "l0");
    expect(screen.getByTestId("constant-axis")).toHaveTextContent("is the same for every member (5): pick another axis.");
  });

  it("cancels the whole sweep only after the confirmation, and holds it", async () => {
    const sweep = makeSweep(4, { counts: { queued: 2, succeeded: 2 } });
    sweep.members[3] = { ...sweep.members[3]!, status: "queued" };
    sweep.members[2] = { ...sweep.members[2]!, status: "queued" };
    const api = sweepPage(sweep, {
      "POST /api/sweeps/2/cancel": () => json(makeSweep(4)),
      "POST /api/sweeps/2/hold": () => json(sweep),
    });
    await userEvent.click(await screen.findByRole("button", { name: "Hold" }));
    await waitFor(() => expect(api.requests.some((r) => r.path === "/api/sweeps/2/hold")).toBe(true));
    await userEvent.click(screen.getByTestId("cancel-sweep"));
    expect(api.requests.some((r) => r.path === "/api/sweeps/2/cancel")).toBe(false);
    await userEvent.click(screen.getByTestId("cancel-sweep-confirm"));
    await waitFor(() => expect(api.requests.some((r) => r.path === "/api/sweeps/2/cancel")).toBe(true));
  });
});

describe("sweeps elsewhere", () => {
  it("the Sweeps page lists each sweep's members by status", async () => {
    vi.stubGlobal(
      "fetch",
      stubApi({
        "GET /api/sweeps": () =>
          json([
            {
              id: 2,
              name: "ks",
              owner: "admin",
              kind: "sae",
              max_parallel: 2,
              created_at: "2026-11-26T05:00:00Z",
              counts: { succeeded: 3, running: 1 },
              swept: [
                { path: "k", how: "grid", values: [8, 16], low: null, high: null, text: "k 8, 16" },
                { path: "lr", how: "log_uniform", values: null, low: 1e-4, high: 0.01, text: "lr 0.0001 to 0.01 log-uniform" },
              ],
            },
          ]),
      }).fetchMock,
    );
    renderPage(<Sweeps />, { path: "/sweeps", route: "/sweeps" });
    const row = await screen.findByTestId("sweep-row");
    expect(within(row).getByRole("link")).toHaveAttribute("href", "/sweeps/2");
    expect(row).toHaveTextContent("1 running");
    expect(row).toHaveTextContent("3 succeeded");
    // what was swept, a parameter a line, under its own column
    const swept = within(row).getByTestId("swept");
    expect(
      within(swept)
        .getAllByRole("listitem")
        .map((li) => li.textContent),
    ).toEqual(["k 8, 16", "lr 0.0001 to 0.01 log-uniform"]);
    expect(screen.getByRole("columnheader", { name: "swept" })).toBeInTheDocument();
  });

  it("a member's job page says which member of which sweep, with its values", async () => {
    vi.stubGlobal("fetch", stubApi({ "GET /api/sweeps/2": () => json(makeSweep(4)) }).fetchMock);
    renderPage(<SweepMembership job={{ id: 102, sweep_id: 2, sweep_params: { k: 8, lr: 0.004 } }} />);
    const line = await screen.findByTestId("sweep-membership");
    await waitFor(() => expect(line).toHaveTextContent("member 2 of sweep #2 (k=8, lr=0.004)"));
    expect(within(line).getByRole("link")).toHaveAttribute("href", "/sweeps/2");
  });
});

describe("the form's Sweep", () => {
  function form(create: () => Response) {
    return renderNewJob(
      {
        "GET /api/kinds": () => json([SAE]),
        "GET /api/kinds/sae": () => json(SAE),
        "POST /api/estimate": () => json(ONE_GIB_ESTIMATE),
        "POST /api/gpus/recommend": () => json(ALL_BUSY),
        "GET /api/gpus": () => json([]),
        "POST /api/sweeps": create,
        "POST /api/jobs": () => json(makeJob(), 201),
      },
      { route: "/new?sweep=1", devices: [makeGpu({ index: 0, uuid: "G0" })] },
    );
  }

  async function fill() {
    await screen.findByTestId("estimate-bytes");
    await userEvent.selectOptions(screen.getByLabelText("sweep field 1"), "k");
    await userEvent.type(screen.getByLabelText("sweep values 1"), "2, 4, 8, 16");
    await userEvent.type(screen.getByLabelText("max parallel"), "2");
    await waitFor(() => expect(screen.getByTestId("submit")).toBeEnabled());
  }

  it("shows the member count and posts the form's job with the grid and max_parallel", async () => {
    const api = form(() => json(makeSweep(4), 201));
    await fill();
    expect(screen.getByTestId("sweep-count")).toHaveTextContent("4 members");
    expect(screen.getByTestId("submit")).toHaveTextContent("Start sweep · 4 members");
    await userEvent.click(screen.getByTestId("submit"));
    await screen.findByTestId("elsewhere");
    const body = api.requests.find((r) => r.path === "/api/sweeps")?.body as Record<string, unknown>;
    expect(body).toMatchObject({ job: { kind: "sae", queue: true }, parameters: { grid: { k: [2, 4, 8, 16] } }, max_parallel: 2 });
    expect(api.requests.some((r) => r.path === "/api/jobs" && r.method === "POST")).toBe(false);
  }, 15_000);

  it("shows the 422 naming the bad member beside the field it varies", async () => {
    const msg = "k (65) must be at most d_sae (64) (member 1: k=65)";
    form(() => json({ detail: [{ loc: ["body", "members[1]", "k"], msg, type: "value_error" }] }, 422));
    await fill();
    await userEvent.click(screen.getByTestId("submit"));
    expect(await screen.findByTestId("sweep-member-error")).toHaveTextContent(msg);
  }, 15_000);
});
