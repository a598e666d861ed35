import { act } from "@testing-library/react";
import { vi } from "vitest";
import type { Gpu } from "../client/types";
import { NewJob } from "../pages/NewJob";
import { FakeWebSocket } from "./fakeWebSocket";
import { makeSample } from "./fixtures";
import { renderPage, stubApi, type Handler } from "./render";

const GIB = 1024 ** 3;

/** POST /api/estimate's answer for a 1 GiB job. */
export const ONE_GIB_ESTIMATE = {
  bytes_per_device: GIB,
  peak_step_bytes: GIB,
  breakdown: [],
  method: "trace",
  world_size: 1,
  per_rank_batch: 4096,
  dtype: "float32",
  device_type: "cpu",
};

/** POST /api/gpus/recommend's answer when the one device is held: a job that may queue still starts. */
export const ALL_BUSY = {
  devices: [],
  excluded: [{ node: "node-a", uuid: "G0", index: 0, reason: "held_by_job", message: "held by job 7" }],
  enough: false,
  message: "all busy",
};

/** The telemetry feed opens and sends one sample of `devices` (node-a). */
export function sendTelemetry(devices: Gpu[]): void {
  act(() => {
    const socket = FakeWebSocket.instances.find((s) => s.url.includes("/ws/telemetry"));
    if (!socket) throw new Error("no telemetry socket");
    socket.open();
    socket.receive({ type: "sample", samples: [makeSample(0, devices)] });
  });
}

/**
 * The new-job page at `route` over a stub API answering `routes` (its requests recorded in the
 * returned object); with `devices`, the telemetry feed has sent them.
 */
export function renderNewJob(routes: Record<string, Handler>, { route = "/new", devices }: { route?: string; devices?: Gpu[] } = {}) {
  const api = stubApi(routes);
  vi.stubGlobal("fetch", api.fetchMock);
  renderPage(<NewJob />, { path: "/new", route });
  if (devices) sendTelemetry(devices);
  return api;
}
