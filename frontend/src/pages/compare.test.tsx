import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { useLocation } from "react-router-dom";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Job } from "../client/types";
import { makeJob, makeSaeKind } from "../test/fixtures";
import { json, renderPage, stubApi } from "../test/render";
import { Compare } from "./Compare";
import { Jobs } from "./Jobs";

afterEach(() => vi.unstubAllGlobals());

const point = (step: number, metrics: Record<string, number>) => ({
  step,
  metrics,
  created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, step)).toISOString(),
});

function Where() {
  const location = useLocation();
  return <span data-testid="location">{location.pathname + location.search}</span>;
}

const jobs: Job[] = [
  makeJob({
    id: 3,
    name: "lr-1e-3",
    status: "succeeded",
    sweep_id: 1,
    config: { lr: 0.001, steps: 100 },
    latest_metrics: { overall_loss: 0.5, l0: 30 },
    tags: ["baseline"],
  }),
  makeJob({
    id: 5,
    name: "lr-3e-3",
    status: "succeeded",
    sweep_id: 1,
    config: { lr: 0.003, steps: 100 },
    latest_metrics: { overall_loss: 0.25, l0: 40 },
  }),
  makeJob({ id: 9, name: "alone", status: "running", config: { lr: 0.001, steps: 200 }, latest_metrics: { overall_loss: 0.75 } }),
];

function api(items: Job[]) {
  return stubApi({
    "GET /api/jobs": (request) => {
      const ids = new URL(request.url).searchParams.getAll("id").map(Number);
      return json({ items: ids.length ? items.filter((j) => ids.includes(j.id)) : items, total: items.length, limit: 500, offset: 0 });
    },
    "GET /api/kinds": () => json([makeSaeKind()]),
    "GET /api/jobs/3/metrics": () => json({ items: [point(0, { overall_loss: 2 }), point(50, { overall_loss: 0.5 })], last_step: 50 }),
    "GET /api/jobs/5/metrics": () => json({ items: [point(0, { overall_loss: 2 }), point(50, { overall_loss: 0.25 })], last_step: 50 }),
    "GET /api/jobs/9/metrics": () => json({ detail: { code: "forbidden", message: "job 9 belongs to bo" } }, 403),
    "PATCH /api/jobs/9/labels": async (request) => json({ ...jobs[2], ...((await request.json()) as object) }),
  });
}

describe("Jobs list", () => {
  it("shows kind, figures and tags, filters by tag, and opens a comparison of the ticked jobs", async () => {
    vi.stubGlobal("fetch", api(jobs).fetchMock);
    renderPage(
      <>
        <Jobs />
        <Where />
      </>,
      { path: "/jobs", route: "/jobs" },
    );
    await waitFor(() => expect(screen.getAllByTestId("job-row")).toHaveLength(3));
    const first = screen.getAllByTestId("job-row").find((r) => r.dataset["jobId"] === "3")!;
    await waitFor(() => expect(within(first).getByTestId("job-figures")).toHaveTextContent("loss 0.500 · L0 30"));
    expect(first).toHaveTextContent("sae");
    expect(within(first).getByRole("link", { name: "baseline" })).toHaveAttribute("href", "/jobs?tag=baseline");

    await userEvent.selectOptions(screen.getByLabelText("tag filter"), "baseline");
    expect(screen.getByTestId("location")).toHaveTextContent("/jobs?tag=baseline");
    expect(screen.getAllByTestId("job-row").map((r) => r.dataset["jobId"])).toEqual(["3"]);
    await userEvent.selectOptions(screen.getByLabelText("tag filter"), "");

    expect(screen.queryByTestId("compare-link")).toBeNull();
    await userEvent.click(screen.getByLabelText("compare job 9"));
    await userEvent.click(screen.getByLabelText("compare job 3"));
    await userEvent.click(screen.getByLabelText("compare job 5"));
    const link = screen.getByTestId("compare-link");
    expect(link).toHaveTextContent("Compare 3 jobs");
    expect(link).toHaveAttribute("href", "/compare?jobs=9,3,5"); // in the order ticked
  });
});

describe("Compare", () => {
  it("puts jobs side by side: figures with the best marked, curves, settings with the differences marked", async () => {
    vi.stubGlobal("fetch", api(jobs).fetchMock);
    renderPage(<Compare />, { path: "/compare", route: "/compare?jobs=9,3,5" });
    const heads = await screen.findAllByRole("columnheader", { name: /#\d+/ });
    expect(heads.slice(0, 3).map((h) => h.textContent)).toEqual(["#9 alone", "#3 lr-1e-3", "#5 lr-3e-3"]);

    const figures = await screen.findByTestId("compare-figures");
    const loss = within(figures).getByRole("rowheader", { name: "loss" }).closest("tr")!;
    expect(
      within(loss)
        .getAllByRole("cell")
        .map((c) => c.textContent),
    ).toEqual(["0.750", "0.500", "0.250"]);
    expect(within(loss).getAllByRole("cell")[2]).toHaveClass("best");

    const configs = screen.getByTestId("compare-configs");
    const differing = configs.querySelectorAll("tr[data-differs]");
    expect([...differing].map((r) => r.querySelector("th")!.textContent)).toEqual(["≠ lr", "≠ steps"]);
    expect(screen.getByTestId("compare-differing-count")).toHaveTextContent("2 of 2 fields differ");

    // the two the caller owns are drawn; the other's curve is its owner's to read, and the page says so
    await waitFor(() => expect(screen.getByTestId("compare-chart").querySelector("[data-points]")).toHaveAttribute("data-points", "2"));
    expect(screen.getByTestId("compare-curves")).toHaveTextContent("not drawn for #9");
    expect(screen.getByLabelText("curve metric")).toHaveValue("overall_loss");
  });

  it("draws a figure against a differing setting, on a log axis where it spans decades, and names the best", async () => {
    const lrs = [
      makeJob({ id: 3, name: "a", config: { lr: 0.0001 }, latest_metrics: { overall_loss: 0.5 } }),
      makeJob({ id: 5, name: "b", config: { lr: 0.01 }, latest_metrics: { overall_loss: 0.25 } }),
    ];
    vi.stubGlobal("fetch", api(lrs).fetchMock);
    renderPage(<Compare />, { path: "/compare", route: "/compare?jobs=3,5" });
    const scatter = await screen.findByTestId("setting-scatter");
    await waitFor(() => expect(within(scatter).getAllByTestId("scatter-point")).toHaveLength(2));
    expect(within(scatter).getByRole("img", { name: "loss against lr" })).toHaveAttribute("data-log-x", "true");
    expect(within(scatter).getByTestId("scatter-best")).toHaveTextContent("Best loss: #5 b at lr 0.01.");
  });

  it("edits a job's tags and notes in place", async () => {
    const stub = api(jobs);
    vi.stubGlobal("fetch", stub.fetchMock);
    renderPage(<Compare />, { path: "/compare", route: "/compare?jobs=9,3" });
    await userEvent.click(await screen.findByLabelText("edit tags of job 9"));
    await userEvent.type(screen.getByLabelText("tags of job 9"), "wide, lr-sweep");
    await userEvent.type(screen.getByLabelText("notes of job 9"), "outside the sweep");
    await userEvent.click(screen.getByRole("button", { name: "save" }));
    await waitFor(() =>
      expect(stub.requests.find((r) => r.method === "PATCH")?.body).toEqual({ tags: ["wide", "lr-sweep"], notes: "outside the sweep" }),
    );
  });

  it("names jobs that do not exist", async () => {
    vi.stubGlobal("fetch", api(jobs).fetchMock);
    renderPage(<Compare />, { path: "/compare", route: "/compare?jobs=3,404" });
    expect(await screen.findByText("No job #404.")).toBeInTheDocument();
  });

  it("asks for two jobs when the URL names fewer", () => {
    vi.stubGlobal("fetch", api(jobs).fetchMock);
    renderPage(<Compare />, { path: "/compare", route: "/compare?jobs=3" });
    expect(screen.getByText(/Name two or more jobs to compare/)).toBeInTheDocument();
  });
});
