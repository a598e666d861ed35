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

it("says how many members the sweep's cancel ended and how many it asked to stop", async () => {
  const sweep = makeSweep(4, { counts: { queued: 2, running: 1, succeeded: 1 } });
  sweep.members = sweep.members.map((m, i) => ({ ...m, status: ["succeeded", "running", "queued", "queued"][i] as string }));
  const after = makeSweep(4, { counts: { cancelled: 2, running: 1, succeeded: 1 } });
  const api = stubApi({
    "GET /api/sweeps/2": () => json(sweep),
    "GET /api/kinds/sae": () => json(makeSaeKind()),
    "POST /api/sweeps/2/cancel": () => json({ ...after, cancelled: 2, stopping: 1 }),
  });
  vi.stubGlobal("fetch", api.fetchMock);
  renderPage(<Sweep />, { path: "/sweeps/:id", route: "/sweeps/2" });
  await userEvent.click(await screen.findByTestId("cancel-sweep"));
  expect(screen.queryByTestId("cancel-result")).toBeNull();
  await userEvent.click(screen.getByTestId("cancel-sweep-confirm"));
  await waitFor(() =>
    expect(screen.getByTestId("cancel-result")).toHaveTextContent("2 waiting cancelled, 1 running asked to stop after a final checkpoint"),
  );
});
