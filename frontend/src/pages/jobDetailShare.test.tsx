import { screen } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Job } from "../client/types";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeJob, makeSaeKind } from "../test/fixtures";
import { json, renderPage, stubApi } from "../test/render";
import { JobDetail } from "./JobDetail";

const GIB = 1024 ** 3;

beforeEach(() => {
  FakeWebSocket.reset();
  vi.stubGlobal("WebSocket", FakeWebSocket);
});
afterEach(() => vi.unstubAllGlobals());

function jobPage(job: Job) {
  const api = stubApi({
    [`GET /api/jobs/${job.id}`]: () => json(job),
    "GET /api/kinds/sae": () => json(makeSaeKind()),
    [`GET /api/jobs/${job.id}/metrics`]: () => json({ items: [], last_step: null }),
    [`GET /api/jobs/${job.id}/logs`]: () => new Response("", { status: 200, headers: { "Content-Type": "text/plain" } }),
    [`GET /api/jobs/${job.id}/checkpoints`]: () => json([]),
    "GET /api/gpus": () => json([]),
  });
  vi.stubGlobal("fetch", api.fetchMock);
  renderPage(<JobDetail />, { path: "/jobs/:id", route: `/jobs/${job.id}` });
}

describe("the job page of a job sharing its devices", () => {
  it("says what it reserves on each device", async () => {
    jobPage(makeJob({ id: 5, share: "memory", reserved_bytes_per_device: 3.5 * GIB }));
    expect(await screen.findByTestId("job-share")).toHaveTextContent("shares device(s): reserves 3.5 GiB per device");
    expect(screen.queryByTestId("job-share-kill")).toBeNull();
  });

  it("says why when the node killed it for running over its reservation", async () => {
    const cause = "used 9.3 GiB of its 8.0 GiB reservation on node-a/2";
    jobPage(
      makeJob({
        id: 6,
        status: "failed",
        share: "memory",
        reserved_bytes_per_device: 8 * GIB,
        error_summary: cause,
        error: `${cause}\nrank 0 failed`,
      }),
    );
    expect(await screen.findByTestId("job-share-kill")).toHaveTextContent(`killed for running over its reservation: ${cause}`);
  });

  it("shows nothing of sharing for a whole-device job", async () => {
    jobPage(makeJob({ id: 7, error_summary: "rank 0: RuntimeError: boom" }));
    await screen.findByTestId("job-error-summary");
    expect(screen.queryByTestId("job-share")).toBeNull();
  });
});
