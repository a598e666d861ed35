import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { makeSaeKind } from "../test/fixtures";
import { json, renderPage, stubApi } from "../test/render";
import { makeSweep } from "../test/sweepFixtures";
import { Sweep } from "./Sweep";

beforeEach(() => {
  vi.spyOn(HTMLCanvasElement.prototype, "getContext").mockReturnValue(null); // jsdom draws nothing
});
afterEach(() => {
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

/** A sweep of 4 with one running and two waiting, at most 1 at once. */
function runningSweep() {
  const sweep = makeSweep(4, { max_parallel: 1, counts: { succeeded: 1, running: 1, queued: 2 } });
  sweep.members = sweep.members.map((m, i) => ({ ...m, status: ["succeeded", "running", "queued", "queued"][i] as string }));
  return sweep;
}

async function typeLimit(value: string) {
  await userEvent.click(await screen.findByTestId("max-parallel-edit"));
  const input = screen.getByTestId("max-parallel-input");
  expect(input).toHaveValue(1);
  await userEvent.clear(input);
  await userEvent.type(input, value);
  await userEvent.click(screen.getByTestId("max-parallel-save"));
}

it("changes a running sweep's max_parallel, shows the new value and says what happens", async () => {
  const sweep = runningSweep();
  const api = stubApi({
    "GET /api/sweeps/2": () => json(sweep),
    "GET /api/kinds/sae": () => json(makeSaeKind()),
    "PATCH /api/sweeps/2": () => json({ ...sweep, max_parallel: 3 }),
  });
  vi.stubGlobal("fetch", api.fetchMock);
  renderPage(<Sweep />, { path: "/sweeps/:id", route: "/sweeps/2" });
  expect(await screen.findByTestId("max-parallel")).toHaveTextContent("at most 1 at once");
  await userEvent.click(screen.getByTestId("max-parallel-edit"));
  expect(screen.getByTestId("max-parallel-form")).toHaveTextContent(
    "More members start at the next pass; lowering it stops no running member.",
  );
  await userEvent.click(screen.getByText("Keep"));
  await typeLimit("3");
  await waitFor(() => expect(screen.getByTestId("max-parallel")).toHaveTextContent("at most 3 at once"));
  expect(screen.getByTestId("max-parallel-result")).toHaveTextContent(
    "now at most 3 at once: more members start at the next pass; lowering it stops no running member",
  );
  expect(api.requests.filter((r) => r.method === "PATCH")).toEqual([{ method: "PATCH", path: "/api/sweeps/2", body: { max_parallel: 3 } }]);
});

it("shows the API's 422 on max_parallel at the control and keeps the old value", async () => {
  const sweep = runningSweep();
  const api = stubApi({
    "GET /api/sweeps/2": () => json(sweep),
    "GET /api/kinds/sae": () => json(makeSaeKind()),
    "PATCH /api/sweeps/2": () =>
      json(
        { detail: [{ loc: ["body", "max_parallel"], msg: "Input should be greater than or equal to 1", type: "greater_than_equal" }] },
        422,
      ),
  });
  vi.stubGlobal("fetch", api.fetchMock);
  renderPage(<Sweep />, { path: "/sweeps/:id", route: "/sweeps/2" });
  await typeLimit("0");
  expect(await screen.findByTestId("max-parallel-error")).toHaveTextContent("Input should be greater than or equal to 1");
  expect(screen.getByTestId("max-parallel-input")).toHaveAttribute("aria-invalid", "true");
  expect(api.requests.find((r) => r.method === "PATCH")?.body).toEqual({ max_parallel: 0 });
  await userEvent.click(screen.getByText("Keep"));
  expect(screen.getByTestId("max-parallel")).toHaveTextContent("at most 1 at once");
});

it("shows a 403 for another user's sweep at the control", async () => {
  const sweep = runningSweep();
  const api = stubApi({
    "GET /api/sweeps/2": () => json(sweep),
    "GET /api/kinds/sae": () => json(makeSaeKind()),
    "PATCH /api/sweeps/2": () => json({ detail: { code: "forbidden", field: "sweep_id", message: "sweep 2 belongs to admin" } }, 403),
  });
  vi.stubGlobal("fetch", api.fetchMock);
  renderPage(<Sweep />, { path: "/sweeps/:id", route: "/sweeps/2" });
  await typeLimit("2");
  expect(await screen.findByTestId("max-parallel-error")).toHaveTextContent("sweep 2 belongs to admin");
});

it("offers no change once every member ended", async () => {
  const api = stubApi({ "GET /api/sweeps/2": () => json(makeSweep(4)), "GET /api/kinds/sae": () => json(makeSaeKind()) });
  vi.stubGlobal("fetch", api.fetchMock);
  renderPage(<Sweep />, { path: "/sweeps/:id", route: "/sweeps/2" });
  expect(await screen.findByTestId("max-parallel")).toHaveTextContent("at most 2 at once");
  expect(screen.queryByTestId("max-parallel-edit")).toBeNull();
});
