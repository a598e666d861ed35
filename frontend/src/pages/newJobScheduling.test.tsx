import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeGpu, makeJob, makeSaeKind } from "../test/fixtures";
import { ALL_BUSY, ONE_GIB_ESTIMATE, renderNewJob } from "../test/newJobPage";
import { json } from "../test/render";

const GIB = 1024 ** 3;

beforeEach(() => FakeWebSocket.reset());
afterEach(() => vi.unstubAllGlobals());

const ONE_FREE = {
  devices: [{ node: "node-a", uuid: "G0", index: 0, name: "GPU", memory_free_bytes: 80 * GIB, memory_total_bytes: 80 * GIB }],
  excluded: [],
  enough: true,
  message: "1 device(s) fit, packed",
};

/** The new-job page over a stub API whose POST /api/jobs answers `create`. */
function setup(create: () => Response = () => json(makeJob({ id: 42, status: "queued" }), 201), recommendation: object = ALL_BUSY) {
  return renderNewJob(
    {
      "GET /api/kinds": () => json([makeSaeKind()]),
      "GET /api/kinds/sae": () => json(makeSaeKind()),
      "POST /api/estimate": () => json(ONE_GIB_ESTIMATE),
      "POST /api/gpus/recommend": () => json(recommendation),
      "GET /api/gpus": () => json([]),
      "POST /api/jobs": create,
    },
    { devices: [makeGpu({ index: 0, uuid: "G0" })] },
  );
}

/** The estimate is in and Start may be pressed (the recommendation has come). */
async function ready() {
  await screen.findByTestId("estimate-bytes");
  await waitFor(() => expect(screen.getByTestId("submit")).toBeEnabled());
}

const created = (api: ReturnType<typeof setup>) => api.requests.find((r) => r.method === "POST" && r.path === "/api/jobs");

describe("NewJob's Scheduling section", () => {
  it("queues by default and sends only the scheduling fields the user set", async () => {
    const api = setup();
    await ready();
    await userEvent.click(screen.getByTestId("submit"));
    await screen.findByTestId("elsewhere");
    const body = created(api)?.body as Record<string, unknown>;
    expect(body).toMatchObject({ kind: "sae", queue: true });
    for (const key of ["priority", "time_limit_s", "depends_on", "preemptible", "hold"]) expect(body).not.toHaveProperty(key);
  });

  it("sends don't-queue, priority, time limit, dependencies, preemptible and held", async () => {
    const api = setup(undefined, ONE_FREE);
    await ready();
    await userEvent.click(screen.getByLabelText("queue if busy"));
    await userEvent.click(screen.getByRole("button", { name: /priority, time limit/ }));
    await userEvent.clear(screen.getByLabelText("priority"));
    await userEvent.type(screen.getByLabelText("priority"), "-5");
    await userEvent.type(screen.getByLabelText("time limit"), "2h");
    await userEvent.type(screen.getByLabelText("depends on"), "3, 4");
    await userEvent.click(screen.getByLabelText("preemptible"));
    await userEvent.click(screen.getByLabelText("submit held"));
    await userEvent.click(screen.getByTestId("submit"));
    await screen.findByTestId("elsewhere");
    expect(created(api)?.body).toMatchObject({
      queue: false,
      priority: -5,
      time_limit_s: 7200,
      depends_on: [3, 4],
      preemptible: true,
      hold: true,
    });
  });

  it("refuses a time limit it cannot read, beside the field, and sends nothing", async () => {
    const api = setup();
    await screen.findByTestId("estimate-bytes");
    await userEvent.click(screen.getByRole("button", { name: /priority, time limit/ }));
    await userEvent.type(screen.getByLabelText("time limit"), "2 hours");
    expect(screen.getByTestId("error-scheduling.time_limit")).toHaveTextContent("not a duration: use e.g. 90s, 30m, 2h or 1d");
    await userEvent.click(screen.getByTestId("submit"));
    expect(created(api)).toBeUndefined();
  });

  it("puts the API's 422 about a dependency beside its field", async () => {
    setup(() => json({ detail: [{ loc: ["body", "depends_on"], msg: "unknown job 99", type: "value_error" }] }, 422));
    await ready();
    await userEvent.click(screen.getByRole("button", { name: /priority, time limit/ }));
    await userEvent.type(screen.getByLabelText("depends on"), "99");
    await userEvent.click(screen.getByTestId("submit"));
    expect(await screen.findByTestId("error-scheduling.depends_on")).toHaveTextContent("unknown job 99");
    expect(screen.queryByText("depends_on: unknown job 99")).toBeNull(); // not twice
  });
});
