import { act, screen, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeGpu, makeNode, makeSample } from "../test/fixtures";
import { json, renderPage, stubApi } from "../test/render";
import { Dashboard } from "./Dashboard";

const GIB = 1024 ** 3;

const reservation = (job_id: number, job_name: string, owner: string, gib: number) => ({
  job_id,
  job_name,
  owner,
  reserved_bytes: gib * GIB,
});

// node-a allows sharing: device A holds two sharing jobs; node-b's device B is held whole.
const shared = makeGpu({
  uuid: "A",
  held_by: { job_id: 3, job_name: "sae-k8", owner: "ana" },
  reservations: [reservation(3, "sae-k8", "ana", 3.5), reservation(4, "sae-k16", "ana", 2.5)],
  reservation_room_bytes: 70 * GIB,
  node_shares_memory: true,
});
const whole = makeGpu({ node: "node-b", uuid: "B", held_by: { job_id: 9, job_name: "big", owner: "bo" } });

beforeEach(() => {
  FakeWebSocket.reset();
  const api = {
    "GET /api/gpus": () => json([shared, whole]),
    "GET /api/nodes": () => json([makeNode("node-a", true), makeNode("node-b", false)]),
  };
  vi.stubGlobal("fetch", stubApi(api).fetchMock);
});
afterEach(() => vi.unstubAllGlobals());

function card(uuid: string): HTMLElement {
  const found = screen.getAllByTestId("gpu-card").find((c) => c.dataset.uuid === uuid);
  if (!found) throw new Error(`no card ${uuid}`);
  return found;
}

describe("Dashboard: devices shared by memory", () => {
  it("draws a shared device's reservations by job with the free remainder, and an exclusive one as before", async () => {
    renderPage(<Dashboard />);
    const socket = FakeWebSocket.instances.find((s) => s.url.includes("/ws/telemetry"))!;
    await screen.findAllByTestId("node-sharing");
    act(() => {
      socket.open();
      // samples carry readings only: the reservations stay those of GET /api/gpus
      socket.receive({ type: "sample", samples: [makeSample(0, [makeGpu({ uuid: "A" })], "node-a")] });
      socket.receive({ type: "sample", samples: [makeSample(0, [makeGpu({ node: "node-b", uuid: "B" })], "node-b")] });
    });
    const segments = within(card("A")).getAllByTestId("reservation-segment");
    expect(segments.map((s) => s.getAttribute("title"))).toEqual(["sae-k8 #3 · ana · 3.5 GiB", "sae-k16 #4 · ana · 2.5 GiB"]);
    // widths are shares of the device's 80 GiB
    expect(segments.map((s) => s.style.width)).toEqual([`${(3.5 / 80) * 100}%`, `${(2.5 / 80) * 100}%`]);
    expect(within(card("A")).getByTestId("reservation-free")).toHaveAttribute("title", "70.0 GiB free of reservations");
    expect(
      within(card("A"))
        .getAllByTestId("reservation")
        .map((r) => r.textContent),
    ).toEqual(["sae-k8 #3 · ana · 3.5 GiB", "sae-k16 #4 · ana · 2.5 GiB"]);
    expect(within(card("A")).getByTestId("holder")).toHaveTextContent("shared by 2 jobs");
    expect(within(card("A")).getByTestId("shareable")).toBeInTheDocument();

    expect(within(card("B")).queryByTestId("reservation-bar")).toBeNull();
    expect(within(card("B")).queryByTestId("shareable")).toBeNull();
    expect(within(card("B")).getByTestId("holder")).toHaveTextContent("big #9 · bo");

    const marks = screen.getAllByTestId("node-sharing");
    expect(marks).toHaveLength(1);
    expect(screen.getAllByTestId("node-group")[0]).toContainElement(marks[0]!);
  });
});
