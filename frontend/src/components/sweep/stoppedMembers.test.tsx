import { screen, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { renderPage } from "../../test/render";
import { makeSweep } from "../../test/sweepFixtures";
import { memberColumns } from "../../lib/sweep/members";
import { FrontierCard } from "./FrontierCard";
import { MembersTable } from "./MembersTable";

const METRICS = [
  { name: "l0", label: "L0" },
  { name: "explained_variance", label: "explained var." },
];

/** Six members: four succeeded, one stopped early, one cancelled; the two stopped ones with the
 * figures of their stop, one of them better in both than every finished member. */
function sweepWithStopped() {
  const sweep = makeSweep(6);
  sweep.members[4] = { ...sweep.members[4]!, status: "stopped_early", progress: { step: 20, total: 60 } };
  sweep.members[5] = {
    ...sweep.members[5]!,
    status: "cancelled",
    progress: { step: 30, total: 60 },
    metrics: { l0: 0.5, explained_variance: 0.999 },
  };
  sweep.counts = { succeeded: 4, stopped_early: 1, cancelled: 1 };
  return sweep;
}

beforeEach(() => {
  vi.spyOn(HTMLCanvasElement.prototype, "getContext").mockReturnValue(null); // jsdom draws nothing
});
afterEach(() => vi.restoreAllMocks());

describe("members stopped before their last step", () => {
  it("are drawn on the scatter, said to be stopped, and kept off the frontier", async () => {
    renderPage(<FrontierCard sweep={sweepWithStopped()} metrics={METRICS} />);
    const scatter = await screen.findByRole("img");
    expect(scatter).toHaveAttribute("data-points", "6");
    expect(scatter).toHaveAttribute("data-stopped", "2");
    expect(screen.getByTestId("scatter-legend")).toHaveTextContent("stopped before its last step");
    expect(screen.getByTestId("frontier-card")).toHaveTextContent("4 of 6 members succeeded with both figures, 2 stopped before");
    // the cancelled member is better in both than every finished one, yet not on the frontier
    const onFrontier = screen.getAllByTestId("frontier-point").map((p) => p.getAttribute("href"));
    expect(onFrontier).not.toContain("/jobs/105");
    expect(onFrontier).not.toContain("/jobs/104");
    expect(onFrontier.length).toBeGreaterThan(0);
  });

  it("show their figures in the table, marked as those of their stop", async () => {
    const sweep = sweepWithStopped();
    renderPage(<MembersTable sweep={sweep} columns={memberColumns(["k"], METRICS)} ticked={new Set()} onTick={() => {}} />);
    const rows = await screen.findAllByTestId("member-row");
    const stopped = rows.find((r) => r.getAttribute("data-job-id") === "104")!;
    expect(stopped).toHaveAttribute("data-stopped", "true");
    const l0 = stopped.querySelector('[data-column="metric:l0"]')!;
    expect(l0.textContent).not.toBe("—");
    expect(l0).toHaveAttribute("title", "at step 20, when it stopped (stopped_early)");
    expect(within(stopped).getByTestId("job-status")).toHaveTextContent("stopped_early");
    const finished = rows.find((r) => r.getAttribute("data-job-id") === "100")!;
    expect(finished).not.toHaveAttribute("data-stopped");
    expect(finished.querySelector('[data-column="metric:l0"]')).not.toHaveAttribute("title");
  });
});
