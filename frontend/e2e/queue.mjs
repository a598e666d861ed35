// Browser tests of the scheduler's queue (issue 13): a job submitted from the form onto a busy
// device waits in the Queue with its reason, is held and released from the page, and starts by
// itself once the device frees; cancel from the Queue asks first. Called from run.mjs.
import { waitFor } from "./lib.mjs";

const SMALL = { steps: 1000000, batch_size: 512 };

/** The Queue page's row for `id`, or null. */
async function queueRow(page, id) {
  const row = page.locator(`[data-testid="queue-row"][data-job-id="${id}"]`);
  return (await row.count()) > 0 ? row : null;
}

async function status(page) {
  return page.getByTestId("job-status").textContent();
}

export async function queueTests({ test, page, server, url, shot, jobTimeoutMs }) {
  let holder = null;
  let waiting = null;

  await test("a job submitted from the form onto a busy device waits, with its reason and place", async () => {
    const gpus = (await server.api("/api/gpus")).body;
    const device = gpus.find((g) => g.index === 0);
    const created = await server.api("/api/jobs", {
      method: "POST",
      body: { kind: "sae", config: SMALL, devices: [{ index: 0 }], name: "holder" },
    });
    if (created.status !== 201) throw new Error(`holder job: ${created.status} ${JSON.stringify(created.body)}`);
    holder = created.body.id;
    await waitFor(async () => (await server.api(`/api/jobs/${holder}`)).body.status === "running", {
      timeoutMs: jobTimeoutMs,
      what: `job ${holder} to run`,
    });
    await page.goto(url("/new"));
    await page.getByLabel("steps", { exact: true }).fill("60");
    await page.getByLabel("metrics every", { exact: true }).fill("10");
    await page.getByLabel("checkpoint every", { exact: true }).fill("50");
    await page.getByLabel("batch size", { exact: true }).fill("512");
    await page.getByLabel("name", { exact: true }).fill("waits-for-gpu0");
    const option = page.locator(`[data-testid="gpu-option"][data-uuid="${device.uuid}"]`);
    // the board knows the device is busy; with "queue if busy" ticked (the default) it can be chosen
    await waitFor(async () => (await option.getByTestId("gpu-reason").textContent())?.includes("the job waits for it"), {
      timeoutMs: 15000,
      what: "GPU 0 offered as busy, to wait for",
    });
    await option.locator("input").check();
    await page.getByTestId("submit").click();
    await page.waitForURL(/\/jobs\/\d+$/, { timeout: 30000 });
    waiting = Number(page.url().split("/").pop());
    const submitted = (await server.api(`/api/jobs/${waiting}`)).body;
    if (submitted.config.steps !== 60) throw new Error(`job ${waiting} runs ${submitted.config.steps} steps, not the form's 60`);
    const place = page.getByTestId("queue-place");
    await place.waitFor({ timeout: 15000 });
    const reason = await page.getByTestId("queue-place-reason").textContent();
    if (!reason?.includes(`job ${holder}`)) throw new Error(`the job page's reason does not name job ${holder}: ${reason}`);
    if ((await page.getByTestId("queue-place-position").textContent()) !== "1") throw new Error("not first in the queue");
  });

  await test("the Queue lists the waiting job; hold, release and a confirmed cancel work from the page", async () => {
    if (waiting === null) throw new Error("no waiting job from the previous test");
    const extra = await server.api("/api/jobs", {
      method: "POST",
      body: { kind: "sae", config: SMALL, devices: [{ index: 0 }], name: "to-cancel" },
    });
    if (extra.status !== 201 || extra.body.status !== "queued") throw new Error(`second waiting job: ${JSON.stringify(extra.body)}`);
    await page.getByRole("link", { name: "Queue" }).click();
    await page.waitForURL(/\/queue$/);
    const row = await waitFor(() => queueRow(page, waiting), { timeoutMs: 15000, what: `job ${waiting} in the queue` });
    if ((await row.getAttribute("data-reason")) !== "devices_busy") throw new Error(`reason ${await row.getAttribute("data-reason")}`);
    if (!(await row.getByTestId("queue-reason").textContent())?.includes(`job ${holder}`))
      throw new Error("the reason does not name the holder");
    await shot(page, "queue.png");

    await row.getByTestId("queue-hold").click();
    await waitFor(async () => (await row.getAttribute("data-reason")) === "held", { timeoutMs: 15000, what: "the row to say held" });
    if (!(await server.api(`/api/jobs/${waiting}`)).body.held) throw new Error("the API does not say held");
    await row.getByTestId("queue-release").click();
    await waitFor(async () => (await row.getAttribute("data-reason")) === "devices_busy", { timeoutMs: 15000, what: "released" });

    const other = await waitFor(() => queueRow(page, extra.body.id), { timeoutMs: 15000, what: "the second job in the queue" });
    await other.getByTestId("queue-cancel").click();
    if ((await server.api(`/api/jobs/${extra.body.id}`)).body.status !== "queued") throw new Error("cancelled without confirmation");
    await other.getByTestId("queue-cancel-confirm").click();
    await waitFor(async () => (await queueRow(page, extra.body.id)) === null, { timeoutMs: 15000, what: "the cancelled job to leave" });
    const cancelled = (await server.api(`/api/jobs/${extra.body.id}`)).body.status;
    if (cancelled !== "cancelled") throw new Error(`the API says ${cancelled}`);
  });

  await test("the waiting job starts by itself when the device frees", async () => {
    if (waiting === null || holder === null) throw new Error("no jobs from the previous tests");
    const cancel = await server.api(`/api/jobs/${holder}/cancel`, { method: "POST" });
    if (cancel.status !== 200) throw new Error(`cancel: ${cancel.status}`);
    await waitFor(async () => (await queueRow(page, waiting)) === null, {
      timeoutMs: jobTimeoutMs,
      what: `job ${waiting} to leave the queue`,
    });
    await page.goto(url(`/jobs/${waiting}`));
    await waitFor(async () => (await status(page)) === "succeeded", { timeoutMs: jobTimeoutMs, what: `job ${waiting} to succeed` });
    if ((await page.getByTestId("queue-place").count()) > 0) throw new Error("the job page still shows a queue place");
    await page.goto(url("/queue"));
    await page.getByText("No job is waiting").waitFor({ timeout: 15000 });
  });
}
