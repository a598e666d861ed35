import { act } from "@testing-library/react";
import { vi } from "vitest";
import type { Gpu } from "../client/types";
import { NewJob } from "../pages/NewJob";
import { FakeWebSocket } from "./fakeWebSocket";
import { makeRecommendation, makeSample } from "./fixtures";
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
export const ALL_BUSY = makeRecommendation({
  excluded: [{ node: "node-a", uuid: "G0", index: 0, reason: "held_by_job", message: "held by job 7" }],
  message: "all busy",
});

/**
 * Its answer when sharing jobs hold the one device (G0) with `roomBytes` free of reservations: whole,
 * the job waits; as a share of 1.5 GiB (ONE_GIB_ESTIMATE + the context reserve) it starts now.
 */
export function sharedNow(roomBytes: number) {
  const device = { node: "node-a", uuid: "G0", index: 0, name: "Simulated GPU", memory_total_bytes: 80 * GIB };
  return makeRecommendation({
    excluded: [{ ...device, reason: "shared", message: "shared by job 7; a sharing job could reserve 70.0 GiB here" }],
    message: "all busy",
    share_bytes_per_device: 1.5 * GIB,
    could_share: true,
    share_devices: [{ ...device, memory_free_bytes: null, reservation_room_bytes: roomBytes }],
    share_message: "could start now by sharing instead of waiting: node-a/0 (70.0 GiB free of reservations)",
  });
}

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
