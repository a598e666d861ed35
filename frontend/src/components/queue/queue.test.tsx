import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { MemoryRouter } from "react-router-dom";
import type { ReactElement } from "react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { makeGpu } from "../../test/fixtures";
import { makeQueuedJob } from "../../test/queueFixtures";
import { GpuSelector } from "../GpuSelector";
import { json, stubApi } from "../../test/render";
import { QueuePlace } from "./QueuePlace";
import { QueueTable } from "./QueueTable";

const NOW = Date.parse("2026-01-01T12:00:00Z");
const inMinutes = (m: number) => new Date(NOW + m * 60_000).toISOString();

function renderTable(jobs = [makeQueuedJob()], onAction = vi.fn()) {
  render(
    <MemoryRouter>
      <QueueTable jobs={jobs} onAction={onAction} now={NOW} />
    </MemoryRouter>,
  );
  return onAction;
}

describe("QueueTable", () => {
  it("lists each waiting job with its place, owner, priority, devices, reason and expected start", () => {
    renderTable([
      makeQueuedJob({ id: 11, name: "big-sweep", owner: "ana", priority: 5 }, { position: 1, expected_start_at: inMinutes(12) }),
      makeQueuedJob(
        { id: 12, name: undefined, kind: "linreg", owner: "bo", world_size: 4 },
        { position: 2, reason_code: "priority", reason: "behind job 11 (priority 5)" },
      ),
    ]);
    const [first, second] = screen.getAllByTestId("queue-row");
    expect(within(first!).getByRole("link")).toHaveTextContent("#11 big-sweep");
    expect(within(first!).getByRole("link")).toHaveAttribute("href", "/jobs/11");
    expect(first).toHaveTextContent("ana");
    expect(within(first!).getByTestId("queue-position")).toHaveTextContent("1");
    // The badge says "devices busy"; the detail does not say it again.
    expect(within(first!).getByTestId("queue-reason")).toHaveTextContent(/^node-a\/0 held by job 3$/);
    expect(first).toHaveTextContent("devices busy");
    expect(within(first!).getByTestId("queue-start")).toHaveTextContent("in ~12 min");
    expect(within(second!).getByRole("link")).toHaveTextContent("#12 linreg");
    expect(second).toHaveTextContent("4 GPUs");
    expect(second).toHaveTextContent("behind higher priority");
    expect(within(second!).getByTestId("queue-start")).toHaveTextContent("unknown");
  });

  it("offers hold for a waiting job and release for a held one", async () => {
    const onAction = renderTable([
      makeQueuedJob({ id: 1 }),
      makeQueuedJob({ id: 2, held: true }, { position: 2, reason_code: "held", reason: "held by ana" }),
    ]);
    const [waiting, held] = screen.getAllByTestId("queue-row");
    expect(within(waiting!).queryByTestId("queue-release")).toBeNull();
    await userEvent.click(within(waiting!).getByTestId("queue-hold"));
    expect(onAction).toHaveBeenLastCalledWith(expect.objectContaining({ id: 1 }), "hold");
    expect(within(held!).queryByTestId("queue-hold")).toBeNull();
    await userEvent.click(within(held!).getByTestId("queue-release"));
    expect(onAction).toHaveBeenLastCalledWith(expect.objectContaining({ id: 2 }), "release");
  });

  it("cancels only once the user confirms", async () => {
    const onAction = renderTable([makeQueuedJob({ id: 5 })]);
    await userEvent.click(screen.getByTestId("queue-cancel"));
    expect(onAction).not.toHaveBeenCalled();
    expect(screen.getByRole("group", { name: "Cancel job #5?" })).toBeInTheDocument();
    await userEvent.click(screen.getByRole("button", { name: "Keep" }));
    expect(onAction).not.toHaveBeenCalled();
    await userEvent.click(screen.getByTestId("queue-cancel"));
    await userEvent.click(screen.getByTestId("queue-cancel-confirm"));
    expect(onAction).toHaveBeenCalledWith(expect.objectContaining({ id: 5 }), "cancel");
  });

  it("says so when nothing waits", () => {
    renderTable([]);
    expect(screen.getByText(/No job is waiting/)).toBeInTheDocument();
  });
});

describe("QueuePlace", () => {
  afterEach(() => vi.unstubAllGlobals());
  const withClient = (element: ReactElement) =>
    render(
      <QueryClientProvider client={new QueryClient({ defaultOptions: { queries: { retry: false } } })}>{element}</QueryClientProvider>,
    );

  it("shows a waiting job's position, reason and expected start", () => {
    withClient(<QueuePlace job={makeQueuedJob({}, { position: 3, expected_start_at: inMinutes(40) })} now={NOW} />);
    expect(screen.getByTestId("queue-place-position")).toHaveTextContent("3");
    expect(screen.getByTestId("queue-place-reason")).toHaveTextContent(/^node-a\/0 held by job 3$/);
    expect(screen.getByTestId("queue-place-start")).toHaveTextContent("in ~40 min");
  });

  it("says when the expected start counts a job ahead for its whole time limit", () => {
    const info = { position: 1, expected_start_at: inMinutes(600), expected_start_from_time_limits: true };
    withClient(<QueuePlace job={makeQueuedJob({}, info)} now={NOW} />);
    expect(screen.getByTestId("queue-place-start")).toHaveTextContent("within ~10 h");
    expect(screen.getByTestId("queue-place")).toHaveTextContent("a job ahead has no measured rate yet");
  });

  it("holds the job from its page", async () => {
    const api = stubApi({
      "POST /api/jobs/9/hold": () => json(makeQueuedJob({ id: 9, held: true }, { reason_code: "held", reason: "held" })),
    });
    vi.stubGlobal("fetch", api.fetchMock);
    withClient(<QueuePlace job={makeQueuedJob({ id: 9 })} now={NOW} />);
    await userEvent.click(screen.getByTestId("queue-place-hold"));
    await waitFor(() => expect(api.requests.map((r) => `${r.method} ${r.path}`)).toContain("POST /api/jobs/9/hold"));
  });

  it("shows nothing once the job has its devices", () => {
    const { container } = withClient(<QueuePlace job={makeQueuedJob({ status: "running" }, null)} now={NOW} />);
    expect(container).toBeEmptyDOMElement();
  });
});

describe("GpuSelector when the job would queue", () => {
  const busy = makeGpu({ index: 1, uuid: "B", held_by: { job_id: 3, job_name: "x", owner: "bo" } });

  it("lets a busy device be chosen, saying the job waits for it", async () => {
    const onChange = vi.fn();
    render(<GpuSelector devices={[busy]} selected={new Set()} onChange={onChange} bytesPerDevice={null} canWait />);
    expect(screen.getByTestId("gpu-reason")).toHaveTextContent("busy: job #3 (bo) · the job waits for it");
    await userEvent.click(screen.getByRole("checkbox"));
    expect(onChange).toHaveBeenCalledWith(new Set(["node-a/B"]));
  });

  it("keeps a busy device closed when the job must not queue", () => {
    render(<GpuSelector devices={[busy]} selected={new Set()} onChange={vi.fn()} bytesPerDevice={null} />);
    expect(screen.getByRole("checkbox")).toBeDisabled();
  });
});
