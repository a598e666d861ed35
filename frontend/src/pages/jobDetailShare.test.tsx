import { screen } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeJob } from "../test/fixtures";
import { renderJobPage } from "../test/jobPage";

const GIB = 1024 ** 3;

beforeEach(() => {
  FakeWebSocket.reset();
  vi.stubGlobal("WebSocket", FakeWebSocket);
});
afterEach(() => vi.unstubAllGlobals());

describe("the job page of a job sharing its devices", () => {
  it("says what it reserves on each device", async () => {
    renderJobPage(makeJob({ id: 5, share: "memory", reserved_bytes_per_device: 3.5 * GIB }));
    expect(await screen.findByTestId("job-share")).toHaveTextContent("shares device(s): reserves 3.5 GiB per device");
    expect(screen.queryByTestId("job-share-kill")).toBeNull();
  });

  it("says why when the node killed it for running over its reservation", async () => {
    const cause = "used 9.3 GiB of its 8.0 GiB reservation on node-a/2";
    renderJobPage(
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
    renderJobPage(makeJob({ id: 7, error_summary: "rank 0: RuntimeError: boom" }));
    await screen.findByTestId("job-error-summary");
    expect(screen.queryByTestId("job-share")).toBeNull();
  });
});
