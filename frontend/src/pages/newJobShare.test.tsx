import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Gpu } from "../client/types";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeGpu, makeJob, makeNode, makeSaeKind } from "../test/fixtures";
import { ALL_BUSY, ONE_GIB_ESTIMATE, renderNewJob, sharedNow } from "../test/newJobPage";
import { json } from "../test/render";
import { makeSweep } from "../test/sweepFixtures";

const GIB = 1024 ** 3;

beforeEach(() => FakeWebSocket.reset());
afterEach(() => vi.unstubAllGlobals());

// the one device is held by a sharing job, 70 GiB free of reservations: a whole-device job waits
const sharedDevice = makeGpu({
  index: 0,
  uuid: "G0",
  held_by: { job_id: 7, job_name: "small", owner: "ana" },
  reservations: [{ job_id: 7, job_name: "small", owner: "ana", reserved_bytes: 4 * GIB }],
  reservation_room_bytes: 70 * GIB,
  node_shares_memory: true,
});

function setup(inventory: Gpu[], shares: boolean, route = "/new", recommendation: object = sharedNow(70 * GIB)) {
  return renderNewJob(
    {
      "GET /api/kinds": () => json([makeSaeKind()]),
      "GET /api/kinds/sae": () => json(makeSaeKind()),
      "POST /api/estimate": () => json(ONE_GIB_ESTIMATE),
      "POST /api/gpus/recommend": () => json(recommendation),
      "GET /api/gpus": () => json(inventory),
      "GET /api/nodes": () => json([makeNode("node-a", shares)]),
      "POST /api/jobs": () => json(makeJob({ id: 42, status: "running" }), 201),
      "POST /api/sweeps": () => json(makeSweep(2), 201),
    },
    { route, devices: [makeGpu({ index: 0, uuid: "G0" })] },
  );
}

const created = (api: ReturnType<typeof setup>) =>
  api.requests.find((r) => r.method === "POST" && r.path === "/api/jobs")?.body as Record<string, unknown>;

describe("NewJob: Share the device by memory", () => {
  it("says what the job would reserve, that it could start now by sharing, and sends share memory", async () => {
    const api = setup([sharedDevice], true);
    await screen.findByTestId("estimate-bytes");
    const toggle = screen.getByLabelText("Share the device by memory");
    // 1 GiB estimate + the node's 512 MiB context reserve
    await waitFor(() =>
      expect(screen.getByTestId("share-what")).toHaveTextContent("Reserves 1.5 GiB per device (its estimate + 512.0 MiB CUDA context)"),
    );
    expect(toggle).toBeEnabled();
    expect(await screen.findByTestId("share-line")).toHaveTextContent(
      "Could start now by sharing instead of waiting: node-a/0 (70.0 GiB free of reservations).",
    );
    await userEvent.click(toggle);
    expect(screen.getByTestId("share-line")).toHaveTextContent("Starts now, sharing node-a/0 (70.0 GiB free of reservations).");
    await waitFor(() => expect(screen.getByTestId("submit")).toBeEnabled());
    await userEvent.click(screen.getByTestId("submit"));
    await screen.findByTestId("elsewhere");
    expect(created(api)).toMatchObject({ kind: "sae", share: "memory", count: 1 });
  });

  it("is disabled with the reason where no node allows sharing, and the job goes whole", async () => {
    const api = setup([makeGpu({ index: 0, uuid: "G0" })], false, "/new", ALL_BUSY);
    await screen.findByTestId("estimate-bytes");
    const toggle = screen.getByLabelText("Share the device by memory");
    expect(toggle).toBeDisabled();
    expect(screen.getByTestId("share-what")).toHaveTextContent(
      "no node allows sharing devices (an admin turns it on with `gpudeck nodes sharing NODE --on`)",
    );
    expect(screen.queryByTestId("share-line")).toBeNull();
    await waitFor(() => expect(screen.getByTestId("submit")).toBeEnabled());
    await userEvent.click(screen.getByTestId("submit"));
    await screen.findByTestId("elsewhere");
    expect(created(api)).not.toHaveProperty("share");
  });

  it("takes the recommender's word on sharing now: room on the board is not enough", async () => {
    // the board shows 70 GiB free of reservations on G0, but the API says the job could not
    // share it now (say, another user's job shares it and the node keeps users apart)
    setup([sharedDevice], true, "/new", ALL_BUSY);
    await screen.findByTestId("estimate-bytes");
    const toggle = screen.getByLabelText("Share the device by memory");
    await waitFor(() => expect(toggle).toBeEnabled());
    expect(screen.queryByTestId("share-line")).toBeNull();
    await userEvent.click(toggle);
    expect(screen.getByTestId("share-line")).toHaveTextContent("Waits for memory: no device has 1.5 GiB free of reservations now.");
  });

  it("makes every member of a sweep share", async () => {
    const api = setup([sharedDevice], true, "/new?sweep=1");
    await screen.findByTestId("estimate-bytes");
    await userEvent.selectOptions(screen.getByLabelText("sweep field 1"), "k");
    await userEvent.type(screen.getByLabelText("sweep values 1"), "2, 4");
    await waitFor(() => expect(screen.getByLabelText("Share the device by memory")).toBeEnabled());
    await userEvent.click(screen.getByLabelText("Share the device by memory"));
    await waitFor(() => expect(screen.getByTestId("submit")).toBeEnabled());
    await userEvent.click(screen.getByTestId("submit"));
    await screen.findByTestId("elsewhere");
    const body = api.requests.find((r) => r.path === "/api/sweeps")?.body as Record<string, unknown>;
    expect(body).toMatchObject({ job: { kind: "sae", share: "memory" }, parameters: { grid: { k: [2, 4] } } });
  }, 15_000);
});
