import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import { makeQueuedJob } from "../test/queueFixtures";
import { json, renderPage, stubApi } from "../test/render";
import { Queue } from "./Queue";

afterEach(() => vi.unstubAllGlobals());

describe("Queue page", () => {
  it("lists the waiting jobs and holds, releases and cancels them through the API", async () => {
    let held = false;
    const api = stubApi({
      "GET /api/queue": () =>
        json({
          items: [
            makeQueuedJob({ id: 3, name: "first" }),
            makeQueuedJob({ id: 4, name: "second", held }, held ? { position: 2, reason_code: "held", reason: "held" } : { position: 2 }),
          ],
          total: 2,
        }),
      "POST /api/jobs/4/hold": () => {
        held = true;
        return json(makeQueuedJob({ id: 4, held: true }));
      },
      "POST /api/jobs/4/release": () => {
        held = false;
        return json(makeQueuedJob({ id: 4 }));
      },
      "POST /api/jobs/3/cancel": () => json(makeQueuedJob({ id: 3, status: "cancelled" }, null)),
    });
    vi.stubGlobal("fetch", api.fetchMock);
    renderPage(<Queue />, { path: "/queue", route: "/queue" });
    expect(await screen.findByTestId("queue-total")).toHaveTextContent("2 waiting");
    const row = () => screen.getAllByTestId("queue-row").find((r) => r.dataset["jobId"] === "4")!;
    await userEvent.click(within(row()).getByTestId("queue-hold"));
    // the queue is read again after the action: the row now offers release and says held
    await waitFor(() => expect(row()).toHaveAttribute("data-reason", "held"));
    await userEvent.click(within(row()).getByTestId("queue-release"));
    await waitFor(() => expect(within(row()).getByTestId("queue-hold")).toBeInTheDocument());
    const first = screen.getAllByTestId("queue-row")[0]!;
    await userEvent.click(within(first).getByTestId("queue-cancel"));
    await userEvent.click(within(first).getByTestId("queue-cancel-confirm"));
    await waitFor(() =>
      expect(api.requests.filter((r) => r.method === "POST").map((r) => r.path)).toEqual([
        "/api/jobs/4/hold",
        "/api/jobs/4/release",
        "/api/jobs/3/cancel",
      ]),
    );
  });

  it("shows why an action was refused", async () => {
    const api = stubApi({
      "GET /api/queue": () => json({ items: [makeQueuedJob({ id: 3 })], total: 1 }),
      "POST /api/jobs/3/hold": () =>
        json({ detail: { code: "forbidden", field: null, message: "only the job's owner or an admin may do this" } }, 403),
    });
    vi.stubGlobal("fetch", api.fetchMock);
    renderPage(<Queue />, { path: "/queue", route: "/queue" });
    await userEvent.click(await screen.findByTestId("queue-hold"));
    expect(await screen.findByTestId("queue-action-error")).toHaveTextContent("only the job's owner or an admin");
  });
});
