// Browser tests against a real `gpudeck run` on simulated devices, in Debian's Chromium.
//   node e2e/run.mjs            screenshots go to frontend/test-results/
//   E2E_SCREENSHOTS=1 node ...  screenshots go to docs/img/ (for the README)
// Ends with "N passed, N failed"; exits non-zero when any test failed.
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { frontendDir, launchBrowser, repoDir, startServer, waitFor } from "./lib.mjs";

const shotsDir = process.env.E2E_SCREENSHOTS === "1" ? join(repoDir, "docs/img") : join(frontendDir, "test-results");
mkdirSync(shotsDir, { recursive: true });
const JOB_TIMEOUT_MS = Number(process.env.E2E_JOB_TIMEOUT_MS ?? 240000);

const results = [];
async function test(name, fn) {
  const started = Date.now();
  try {
    await fn();
    results.push({ name, ok: true });
    console.log(`  ok    ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  } catch (error) {
    results.push({ name, ok: false });
    console.log(`  FAIL  ${name}\n        ${String(error?.stack ?? error).split("\n").slice(0, 6).join("\n        ")}`);
  }
}

async function shot(page, name) {
  await page.screenshot({ path: join(shotsDir, name), fullPage: false });
}

/** Every card's readings as one string: changes when any number on the board changes. */
function boardReadings(page) {
  return page.$$eval('[data-testid="gpu-card"]', (cards) =>
    cards
      .map((c) => ["util", "temp", "power", "mem-used"].map((id) => c.querySelector(`[data-testid="${id}"]`)?.textContent ?? "").join("|"))
      .join(";"),
  );
}

async function fillForm(page, { steps, count = 1 }) {
  await page.getByLabel("steps", { exact: true }).fill(String(steps));
  await page.getByLabel("metrics every", { exact: true }).fill("10");
  await page.getByLabel("checkpoint every", { exact: true }).fill(String(Math.max(50, Math.floor(steps / 4))));
  await page.getByLabel("batch size", { exact: true }).fill("512");
  await page.getByLabel("device count").fill(String(count));
  await page.getByTestId("estimate-bytes").waitFor({ timeout: 30000 });
  const use = page.getByTestId("use-recommended");
  await waitFor(async () => (await use.textContent())?.startsWith("Use recommended"), { timeoutMs: 30000, what: "a recommendation" });
  await use.click();
  await waitFor(async () => (await page.locator('[data-testid="gpu-option"] input:checked').count()) === count, {
    what: `${count} selected devices`,
  });
}

async function jobIdFromUrl(page) {
  await page.waitForURL(/\/jobs\/\d+$/, { timeout: 30000 });
  return Number(page.url().split("/").pop());
}

async function main() {
  console.log("e2e: starting gpudeck run on simulated devices");
  const server = await startServer({ devices: "4x80GiB" });
  const browser = await launchBrowser();
  const { context } = browser;
  const consoleErrors = [];
  context.on("page", (p) => p.on("pageerror", (e) => consoleErrors.push(String(e))));
  const page = await context.newPage();
  page.on("pageerror", (e) => consoleErrors.push(String(e)));
  const url = (path) => `${server.baseUrl}${path}`;
  // sessionStorage is per tab: a new tab signs in through the link `gpudeck run` prints
  const signedIn = (path) => (server.token ? url(`${path}#token=${server.token}`) : url(path));
  let longJobId = null;
  try {
    await test("the sign-in link from `gpudeck run` signs the browser in", async () => {
      await page.goto(signedIn("/"));
      await page.getByRole("link", { name: "GPUs" }).waitFor({ timeout: 15000 });
      if (page.url().includes("token=")) throw new Error("the token stayed in the address bar");
    });

    await test("the board shows live simulated devices whose numbers change", async () => {
      await page.goto(url("/"));
      await waitFor(async () => (await page.getByTestId("gpu-card").count()) === 4, { timeoutMs: 30000, what: "4 GPU cards" });
      await page.locator('[data-testid="connection"][data-state="live"]').waitFor({ timeout: 15000 });
      const badge = await page.getByTestId("gpu-card").first().locator(".badge.source").textContent();
      if (badge !== "simulated") throw new Error(`source badge says ${badge}`);
      const first = await boardReadings(page);
      await waitFor(async () => (await boardReadings(page)) !== first, { timeoutMs: 15000, what: "the numbers to change" });
      await page.getByRole("button", { name: "aggregated" }).click();
      await page.getByTestId("aggregate").waitFor();
      await page.getByRole("button", { name: "per GPU" }).click();
    });

    await test("a user fills the form, takes the recommendation, and watches the job succeed", async () => {
      await page.goto(url("/new"));
      await fillForm(page, { steps: 400, count: 2 });
      await shot(page, "new-job.png");
      await page.getByTestId("submit").click();
      const id = await jobIdFromUrl(page);
      const points = () => page.locator('[data-testid="loss-chart"] .chart-host').getAttribute("data-points").then(Number);
      let seen = 0;
      let grew = 0;
      await waitFor(
        async () => {
          const n = await points();
          if (n > seen) {
            if (seen > 0) grew += 1;
            seen = n;
          }
          return (await page.getByTestId("job-status").textContent()) === "succeeded";
        },
        { timeoutMs: JOB_TIMEOUT_MS, intervalMs: 300, what: `job ${id} to succeed` },
      );
      seen = Math.max(seen, await points());
      if (grew < 1 || seen < 3) throw new Error(`the loss chart did not grow while the job ran (grew ${grew} times, ${seen} points)`);
      await page.getByTestId("checkpoints").waitFor({ timeout: 15000 });
      await shot(page, "job-detail.png");
    });

    await test("a second submission for the same devices shows the conflict", async () => {
      const other = await context.newPage();
      await page.goto(url("/new"));
      await other.goto(signedIn("/new"));
      await fillForm(page, { steps: 1000000, count: 1 });
      await fillForm(other, { steps: 1000, count: 1 });
      const chosen = await page.locator('[data-testid="gpu-option"]:has(input:checked)').getAttribute("data-uuid");
      const otherChosen = await other.locator('[data-testid="gpu-option"]:has(input:checked)').getAttribute("data-uuid");
      if (chosen !== otherChosen) throw new Error(`the two forms picked different devices (${chosen}, ${otherChosen})`);
      await page.getByTestId("submit").click();
      longJobId = await jobIdFromUrl(page);
      await other.getByTestId("submit").click();
      const conflict = other.getByTestId("conflict");
      await conflict.waitFor({ timeout: 15000 });
      const text = await conflict.textContent();
      if (!text?.includes(`job #${longJobId}`)) throw new Error(`the conflict does not name job #${longJobId}: ${text}`);
      await other.close();
    });

    await test("cancel stops a running job", async () => {
      if (longJobId === null) throw new Error("no job from the previous test");
      await page.goto(url("/"));
      await waitFor(async () => (await page.getByTestId("holder").allTextContents()).some((t) => t.includes(`job #${longJobId}`)), {
        timeoutMs: 15000,
        what: "the board to show the job holding its device",
      });
      await page.waitForTimeout(3000);
      await shot(page, "dashboard.png");
      await page.goto(url(`/jobs/${longJobId}`));
      await waitFor(async () => ["running", "starting", "queued"].includes(await page.getByTestId("job-status").textContent()), {
        what: "the job to be live",
      });
      await page.getByTestId("cancel").click();
      await waitFor(async () => (await page.getByTestId("job-status").textContent()) === "cancelled", {
        timeoutMs: 60000,
        what: "status cancelled",
      });
      const job = await server.api(`/api/jobs/${longJobId}`);
      if (job.body.status !== "cancelled") throw new Error(`API says ${job.body.status}`);
      await page.goto(url("/jobs"));
      await page.getByTestId("job-row").first().waitFor();
      await shot(page, "jobs.png");
    });

    await test("no uncaught errors in the page", async () => {
      if (consoleErrors.length > 0) throw new Error(consoleErrors.join("\n"));
    });
  } finally {
    await browser.close();
    // CI keeps nothing but its output: show what the server and the ranks said before the
    // data directory goes.
    if (results.some((r) => !r.ok)) printServerLogs(server.logPath);
    await server.stop();
  }
  const passed = results.filter((r) => r.ok).length;
  const failed = results.length - passed;
  console.log(`e2e: ${passed} passed, ${failed} failed`);
  if (failed > 0) console.log(`(server log was in ${server.logPath}; set E2E_KEEP_DATA=1 to keep it)`);
  process.exit(failed > 0 ? 1 : 0);
}

main().catch((error) => {
  console.error(`e2e: ${error.stack ?? error}`);
  console.log("e2e: 0 passed, 1 failed");
  process.exit(1);
});

function tail(path, lines) {
  try {
    return readFileSync(path, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "(unreadable)";
  }
}

function printServerLogs(logPath) {
  const dataDir = dirname(logPath);
  console.log(`--- last lines of ${logPath}\n${tail(logPath, 80)}`);
  const jobsDir = join(dataDir, "jobs");
  if (!existsSync(jobsDir)) return;
  for (const job of readdirSync(jobsDir)) {
    for (const file of readdirSync(join(jobsDir, job)).filter((f) => f.endsWith(".log") || f.endsWith(".traceback"))) {
      console.log(`--- job ${job}: ${file}\n${tail(join(jobsDir, job, file), 30)}`);
    }
  }
}
