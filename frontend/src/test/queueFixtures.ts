import type { QueueInfo, ScheduledJob } from "../client/types";
import { makeJob } from "./fixtures";

/** A job waiting in the queue, as GET /api/queue lists it: no devices held yet. */
export function makeQueuedJob(overrides: Partial<ScheduledJob> = {}, queue: Partial<QueueInfo> | null = {}): ScheduledJob {
  return {
    ...makeJob({ status: "queued", started_at: null, progress: { step: 0, total: 100 }, devices: [] }),
    queue:
      queue === null
        ? null
        : { position: 1, reason_code: "devices_busy", reason: "devices busy: node-a/0 held by job 3", expected_start_at: null, ...queue },
    ...overrides,
  };
}
