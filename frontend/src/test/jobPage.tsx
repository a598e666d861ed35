import { vi } from "vitest";
import type { Job } from "../client/types";
import { JobDetail } from "../pages/JobDetail";
import { makeSaeKind } from "./fixtures";
import { json, renderPage, stubApi } from "./render";

/**
 * The job page of `job` over a stub API that answers what the page reads (the job, its kind,
 * metrics, logs, checkpoints, the devices), empty past the job itself. The page's WebSocket is
 * the test's to stub (FakeWebSocket).
 */
export function renderJobPage(job: Job) {
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
  return api;
}
