import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeWebSocket } from "../test/fakeWebSocket";
import { makeJob, makeSaeKind } from "../test/fixtures";
import { renderNewJob } from "../test/newJobPage";
import { json, renderPage, stubApi } from "../test/render";
import { JobDetail } from "./JobDetail";

beforeEach(() => {
  FakeWebSocket.reset();
  vi.stubGlobal("WebSocket", FakeWebSocket);
});
afterEach(() => vi.unstubAllGlobals());

const at = new Date().toISOString();
const metrics = (...steps: number[]) =>
  json({ items: steps.map((step) => ({ step, metrics: { overall_loss: 1 / step }, created_at: at })), last_step: steps.at(-1) ?? null });
const checkpoint = { step: 50, path: "x", size_bytes: 1, loss: 0.5, created_at: at, files: [], node: "vm", location: null };

function jobPage(job: ReturnType<typeof makeJob>, extra: Record<string, (request: Request) => Response> = {}) {
  const api = stubApi({
    [`GET /api/jobs/${job.id}`]: () => json(job),
    "GET /api/kinds/sae": () => json(makeSaeKind()),
    [`GET /api/jobs/${job.id}/metrics`]: () => metrics(),
    [`GET /api/jobs/${job.id}/logs`]: () => new Response("", { status: 200, headers: { "Content-Type": "text/plain" } }),
    [`GET /api/jobs/${job.id}/checkpoints`]: () => json([]),
    "GET /api/gpus": () => json([]),
    ...extra,
  });
  vi.stubGlobal("fetch", api.fetchMock);
  renderPage(<JobDetail />, { path: "/jobs/:id", route: `/jobs/${job.id}` });
  return api;
}

describe("JobDetail actions", () => {
  it("asks before cancelling, and cancels only on yes", async () => {
    const api = jobPage(makeJob(), { "POST /api/jobs/7/cancel": () => json(makeJob({ status: "cancelled" })) });
    await userEvent.click(await screen.findByTestId("cancel"));
    await userEvent.click(screen.getByRole("button", { name: "Keep running" }));
    expect(api.requests.some((r) => r.path === "/api/jobs/7/cancel")).toBe(false);
    await userEvent.click(screen.getByTestId("cancel"));
    await userEvent.click(screen.getByTestId("confirm-cancel"));
    await waitFor(() => expect(api.requests.some((r) => r.method === "POST" && r.path === "/api/jobs/7/cancel")).toBe(true));
  });

  it("on another user's job says its runs are the owner's, and stops asking", async () => {
    const forbidden = () => json({ detail: { message: "job 7 belongs to ana", code: "forbidden", field: "job_id" } }, 403);
    const api = jobPage(makeJob({ owner: "ana" }), {
      "GET /api/jobs/7/metrics": forbidden,
      "GET /api/jobs/7/logs": forbidden,
      "GET /api/jobs/7/checkpoints": forbidden,
    });
    expect(await screen.findByTestId("owner-only")).toHaveTextContent("Only ana, who owns this job, or an admin");
    expect(screen.queryByText("no data yet")).toBeNull();
    expect(screen.queryByText("no output yet")).toBeNull();
    const asked = () => api.requests.filter((r) => r.path === "/api/jobs/7/metrics").length;
    const before = asked();
    await new Promise((resolve) => setTimeout(resolve, 3500)); // past the 3 s poll
    expect(asked()).toBe(before);
    expect(FakeWebSocket.instances.filter((w) => w.url.includes("/ws/jobs/7")).length).toBeLessThanOrEqual(1);
  }, 10000);

  it("says why a cancel failed, after the confirmation is gone", async () => {
    const refused = () => json({ detail: { message: "job 7 already ended (succeeded)", code: "conflict" } }, 409);
    jobPage(makeJob(), { "POST /api/jobs/7/cancel": refused });
    await userEvent.click(await screen.findByTestId("cancel"));
    await userEvent.click(screen.getByTestId("confirm-cancel"));
    expect(await screen.findByTestId("cancel-error")).toHaveTextContent("could not cancel: job 7 already ended (succeeded)");
  });

  it("offers Resume only when the stopped job left a checkpoint", async () => {
    jobPage(makeJob({ status: "failed", finished_at: at }));
    await screen.findByTestId("run-again");
    await waitFor(() => expect(screen.getByText(/None yet/)).toBeInTheDocument());
    expect(screen.queryByTestId("resume")).toBeNull();
  });

  it("lists a checkpoint on another node's disk with its sizes and where to copy it from, with no dead link", async () => {
    const elsewhere = {
      ...checkpoint,
      size_bytes: 3 * 1024 ** 2,
      files: [{ name: "sae_weights.safetensors", size_bytes: 3 * 1024 ** 2, url: null }],
      node: "node-a",
      location: "node-a:/srv/gpudeck/checkpoints/7/step_50",
    };
    jobPage(makeJob({ status: "succeeded", finished_at: at }), { "GET /api/jobs/7/checkpoints": () => json([elsewhere]) });
    const location = await screen.findByTestId("checkpoint-location");
    expect(location).toHaveTextContent("on node node-a's disk, not this server's: copy it from node-a:/srv/gpudeck/checkpoints/7/step_50");
    expect(screen.getByText("sae_weights.safetensors").closest("a")).toBeNull();
    expect(screen.getByTestId("checkpoints")).toHaveTextContent("3.0 MiB");
  });

  it("offers Resume for a cancelled job with a checkpoint, and says duration, not running for", async () => {
    jobPage(makeJob({ status: "cancelled", finished_at: at }), { "GET /api/jobs/7/checkpoints": () => json([checkpoint]) });
    expect(await screen.findByTestId("resume")).toBeEnabled();
    expect(screen.getByText("duration")).toBeInTheDocument();
    expect(screen.queryByText("running for")).toBeNull();
  });

  it("links a resumed job to the job it continues and draws that job's curve first", async () => {
    jobPage(makeJob({ id: 9, resume_from_job_id: 7 }), {
      "GET /api/jobs/7/metrics": () => metrics(10, 20, 50, 60),
      "GET /api/jobs/9/metrics": () => metrics(60, 70),
    });
    expect(await screen.findByTestId("continues")).toHaveAttribute("href", "/jobs/7");
    await waitFor(() => expect(screen.getByTestId("loss-chart").querySelector(".chart-host")).toHaveAttribute("data-points", "5"));
  });

  it("shows a preempted job's stretches on devices, each ending where the next resumes", async () => {
    const segment = (last_step: number | null, outcome: string | null, reason: string | null = null) => ({
      started_at: at,
      ended_at: outcome ? at : null,
      outcome,
      reason,
      last_step,
    });
    const api = jobPage(makeJob({ preemptible: true }), {
      "GET /api/jobs/7/segments": () => json([segment(120, "preempted", "preempted by job 9"), segment(null, null)]),
    });
    const rows = await screen.findAllByTestId("segment");
    expect(rows.map((r) => r.textContent)).toEqual([expect.stringContaining("120preempted by job 9"), expect.stringContaining("running")]);
    expect(api.requests.some((r) => r.path === "/api/jobs/7/segments")).toBe(true);
  });

  it("asks for no history for a job that cannot be preempted", async () => {
    const api = jobPage(makeJob({ preemptible: false }));
    await screen.findByTestId("cancel");
    expect(screen.queryByTestId("segments")).toBeNull();
    expect(api.requests.some((r) => r.path.endsWith("/segments"))).toBe(false);
  });

  it("puts a failed job's one-line cause above its traceback", async () => {
    jobPage(
      makeJob({
        status: "failed",
        finished_at: at,
        error: "Traceback ...\nFileNotFoundError: datasets",
        error_summary: "rank 0: FileNotFoundError: datasets",
      }),
    );
    expect(await screen.findByTestId("job-error-summary")).toHaveTextContent("rank 0: FileNotFoundError: datasets");
    expect(screen.getByTestId("job-error")).toHaveTextContent("Traceback");
  });

  it("titles an ended job's missing figure as never reported, and a running job's not", async () => {
    jobPage(makeJob({ status: "succeeded", finished_at: at }), { "GET /api/jobs/7/metrics": () => metrics(10) });
    const dash = await screen.findByText((_, node) => node?.tagName === "DD" && node.previousSibling?.textContent === "L0");
    expect(dash).toHaveTextContent("—");
    expect(dash).toHaveAttribute("title", "not reported by this job; its log may say why");
    expect(screen.getByTestId("last-loss")).not.toHaveAttribute("title");
  });

  it("reads the checkpoints again when the job ends", async () => {
    const api = jobPage(makeJob({ status: "cancelled", finished_at: at }));
    await screen.findByTestId("run-again");
    await waitFor(() => expect(api.requests.filter((r) => r.path === "/api/jobs/7/checkpoints").length).toBeGreaterThanOrEqual(1));
  });
});

describe("JobDetail across nodes", () => {
  it("shows the ranks each node runs", async () => {
    const devices = [
      { node: "node-b", uuid: "B0", index: 0, rank: 2 },
      { node: "node-a", uuid: "A0", index: 0, rank: 0 },
      { node: "node-a", uuid: "A1", index: 1, rank: 1 },
      { node: "node-b", uuid: "B1", index: 1, rank: 3 },
    ];
    jobPage(makeJob({ devices, world_size: 4 }));
    expect(await screen.findByTestId("ranks-per-node")).toHaveTextContent("node-a: 0, 1 · node-b: 2, 3");
  });

  it("lists the Logs card's ranks under their nodes and shows a rank of the second node", async () => {
    const devices = [
      { node: "node-a", uuid: "A0", index: 0, rank: 0 },
      { node: "node-a", uuid: "A1", index: 1, rank: 1 },
      { node: "node-b", uuid: "B0", index: 0, rank: 2 },
      { node: "node-b", uuid: "B1", index: 1, rank: 3 },
    ];
    const logs = (request: Request) => {
      const rank = new URL(request.url).searchParams.get("rank");
      return new Response(`output of rank ${rank}\n`, { status: 200, headers: { "Content-Type": "text/plain" } });
    };
    const api = jobPage(makeJob({ devices, world_size: 4 }), { "GET /api/jobs/7/logs": logs });
    const nodeB = await screen.findByTestId("log-node-node-b");
    expect(nodeB).toHaveTextContent("node-b");
    expect(
      within(nodeB)
        .getAllByRole("button")
        .map((b) => b.textContent),
    ).toEqual(["rank 2", "rank 3"]);
    expect(
      within(screen.getByTestId("log-node-node-a"))
        .getAllByRole("button")
        .map((b) => b.textContent),
    ).toEqual(["rank 0", "rank 1"]);
    expect(await screen.findByTestId("log-tail")).toHaveTextContent("output of rank 0");
    expect(screen.getByTestId("log-source")).toHaveTextContent("rank 0 on node-a");
    await userEvent.click(within(nodeB).getByRole("button", { name: "rank 2" }));
    await waitFor(() => expect(screen.getByTestId("log-tail")).toHaveTextContent("output of rank 2"));
    expect(screen.getByTestId("log-source")).toHaveTextContent("rank 2 on node-b");
    expect(within(nodeB).getByRole("button", { name: "rank 2" })).toHaveAttribute("aria-pressed", "true");
    expect(api.requests.some((r) => r.path === "/api/jobs/7/logs")).toBe(true);
  });

  it("opens the log of the rank whose failure ended the job, not rank 0's", async () => {
    const logs = (request: Request) => {
      const rank = new URL(request.url).searchParams.get("rank");
      return new Response(`output of rank ${rank}\n`, { status: 200, headers: { "Content-Type": "text/plain" } });
    };
    const failed = makeJob({
      status: "failed",
      finished_at: at,
      world_size: 2,
      error: "rank 1 failed: ...",
      error_summary: "rank 1: FileNotFoundError: /data/shard-7.bin",
      failed_rank: 1,
    });
    jobPage(failed, { "GET /api/jobs/7/logs": logs });
    expect(await screen.findByTestId("log-tail")).toHaveTextContent("output of rank 1");
    expect(screen.getByRole("button", { name: "rank 1" })).toHaveAttribute("aria-pressed", "true");
  });

  it("has no ranks-per-node line on one node", async () => {
    jobPage(makeJob());
    await screen.findByTestId("cancel");
    expect(screen.queryByTestId("ranks-per-node")).toBeNull();
    expect(screen.queryByTestId("log-source")).toBeNull(); // one node: no node to name
  });
});

describe("Run again", () => {
  it("opens the new-job form at the earlier job's settings", async () => {
    renderNewJob(
      {
        "GET /api/jobs/7": () => json(makeJob({ config: { ...makeSaeKind().defaults, steps: 1234, d_sae: 512 } })),
        "GET /api/kinds": () => json([makeSaeKind()]),
        "GET /api/kinds/sae": () => json(makeSaeKind()),
        "GET /api/gpus": () => json([]),
      },
      { route: "/new?kind=sae&from=7" },
    );
    expect(await screen.findByLabelText("steps", { exact: true })).toHaveValue("1234");
    expect(screen.getByLabelText("d_sae")).toHaveValue("512");
    // the same name and devices (2, not the form's 1), and the form says where it came from
    expect(await screen.findByLabelText("name")).toHaveValue("sae-test");
    expect(screen.getByLabelText("device count")).toHaveValue(2);
    expect(screen.getByTestId("prefilled-note")).toHaveTextContent("Prefilled from job #7 (sae-test)");
  });
});

describe("JobDetail memory", () => {
  it("shows each rank's peak host and device memory, the limit, and the advice for next time", async () => {
    const advice = "peak 310 MiB passed the 256 MiB declared per rank: declare 512 MiB (memory_per_device_bytes)";
    const job = makeJob({
      status: "succeeded",
      rank_memory: {
        host_limit_bytes: 2 * 1024 ** 3,
        exceeded: false,
        ranks: [
          { rank: 0, host_peak_rss_bytes: 300 * 1024 ** 2 },
          { rank: 1, host_peak_rss_bytes: 310 * 1024 ** 2 },
        ],
        device_peak_bytes: { "0": 5 * 1024 ** 3, "1": 4 * 1024 ** 3 },
      },
      advice: [advice],
    });
    jobPage(job);
    expect(await screen.findByTestId("rank-peak-1")).toHaveTextContent("310");
    expect(screen.getByTestId("rank-peak-0")).toHaveTextContent("300");
    expect(screen.getByTestId("host-limit")).toHaveTextContent("2.0 GiB");
    expect(screen.getByTestId("rank-device-peak-0")).toHaveTextContent("5.0 GiB");
    expect(screen.getByTestId("rank-device-peak-1")).toHaveTextContent("4.0 GiB");
    expect(screen.getByTestId("advice")).toHaveTextContent(advice);
  });

  it("shows nothing of it for a job that measured nothing", async () => {
    jobPage(makeJob());
    await screen.findByTestId("job-peak");
    expect(screen.queryByTestId("rank-memory")).toBeNull();
  });
});

describe("JobDetail settings", () => {
  it("shows the job's settings, also on another user's job (its config is not the owner's alone)", async () => {
    const forbidden = () => json({ detail: { message: "job 7 belongs to ana", code: "forbidden", field: "job_id" } }, 403);
    const settings = {
      job_id: 7,
      kind: "sae",
      settings: [{ path: "lr", value: 0.01, default: 0.004, has_default: true, is_default: false, note: "" }],
      sweep_id: null,
      sweep_differences: [],
    };
    jobPage(makeJob({ owner: "ana" }), { "GET /api/jobs/7/settings": () => json(settings), "GET /api/jobs/7/metrics": forbidden });
    expect(await screen.findByTestId("job-settings")).toHaveTextContent("lr0.01default 0.004");
    expect(screen.queryByTestId("sweep-differences")).toBeNull();
  });
});
