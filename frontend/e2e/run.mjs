// Browser tests against a real `gpudeck run` on simulated devices, in Debian's Chromium.
//   node e2e/run.mjs            screenshots go to frontend/test-results/
//   E2E_SCREENSHOTS=1 node ...  screenshots go to docs/img/ (for the README)
// Ends with "N passed, N failed"; exits non-zero when any test failed.
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { frontendDir, installExampleKind, launchBrowser, pythonPathWith, repoDir, startServer, waitFor } from "./lib.mjs";
import { boardSlurmTests } from "./boardSlurm.mjs";
import { clusterTests } from "./clusters.mjs";
import { compareTests } from "./compare.mjs";
import { kindsTests, runAgainTests, SCRIPT_ENV } from "./kinds.mjs";
import { mapCodeRoot, mapTests } from "./map.mjs";
import { phoneTests } from "./phone.mjs";
import { queueTests } from "./queue.mjs";
import { settingsTests } from "./settings.mjs";
import { sharingTests } from "./sharing.mjs";
import { sweepTests } from "./sweeps.mjs";

const shotsDir = process.env.E2E_SCREENSHOTS === "1" ? join(repoDir, "docs/img") : join(frontendDir, "test-results");
mkdirSync(shotsDir, { recursive: true });
const JOB_TIMEOUT_MS = Number(process.env.E2E_JOB_TIMEOUT_MS ?? 240000);

const results = [];
// E2E_ONLY=regex runs the tests whose names match (the others are not counted), after the
// sign-in every later test relies on
const only = process.env.E2E_ONLY ? new RegExp(`${process.env.E2E_ONLY}|^the sign-in link`) : null;
async function test(name, fn) {
  if (only && !only.test(name)) return;
  const started = Date.now();
  try {
    await fn();
    results.push({ name, ok: true });
    console.log(`  ok    ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  } catch (error) {
    results.push({ name, ok: false });
    console.log(
      `  FAIL  ${name}\n        ${String(error?.stack ?? error)
        .split("\n")
        .slice(0, 6)
        .join("\n        ")}`,
    );
  }
}

async function shot(page, name) {
  await page.screenshot({ path: join(shotsDir, name), fullPage: false });
}

/** Lets charts settle before a screenshot for the README (E2E_SCREENSHOTS=1); a test run's
 *  screenshots are for looking into a failure, and waiting for them asserted nothing. */
async function settleForShot(page, ms) {
  if (process.env.E2E_SCREENSHOTS === "1") await page.waitForTimeout(ms);
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
  console.log("e2e: installing the example kind; starting gpudeck run on simulated devices");
  // a kind installed with pip, offered by the server (and its worker's ranks) through PYTHONPATH
  const plugin = installExampleKind();
  const code = mapCodeRoot(); // the map test's user function
  const server = await startServer({
    devices: "4x80GiB",
    env: { PYTHONPATH: pythonPathWith(plugin.dir), GPUDECK_SCRIPT_CODE_ROOTS: code.dir, GPUDECK_SCRIPT_ENV_ALLOWLIST: SCRIPT_ENV },
  }).catch((error) => {
    plugin.remove();
    code.remove();
    throw error;
  });
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

    await test("sign-in: a wrong token is refused in place; a pasted link signs in; a revoked token ends the session quietly", async () => {
      if (!server.token) throw new Error("this server runs without authentication");
      const tab = await context.newPage();
      try {
        await tab.goto(url("/"));
        const field = tab.getByLabel("API token");
        await field.fill("gpd_wrong");
        await tab.getByRole("button", { name: "Sign in" }).click();
        const error = tab.getByTestId("signin-error");
        await error.waitFor({ timeout: 15000 });
        if (!(await error.textContent())?.includes("not accepted")) throw new Error(`error says: ${await error.textContent()}`);
        if ((await field.inputValue()) !== "gpd_wrong") throw new Error("the refused token was cleared from the field");
        if (!(await tab.locator(".signin").textContent())?.includes("gpudeck token create"))
          throw new Error("the hint names no real command");
        // a token of its own, so revoking it leaves the suite's token working
        const created = await server.api("/api/auth/tokens", { method: "POST", body: { name: "e2e-revoked" } });
        if (created.status !== 201) throw new Error(`token create answered ${created.status}`);
        await tab.goto(url(`/#token=${created.body.token}`)); // same document: only the hash changes
        await tab.locator('[data-testid="connection"][data-state="live"]').waitFor({ timeout: 15000 });
        let requests = 0;
        tab.on("request", (request) => {
          if (new URL(request.url()).pathname.startsWith("/api/")) requests += 1;
        });
        const revoked = await server.api(`/api/auth/tokens/${created.body.id}`, { method: "DELETE" });
        if (revoked.status !== 200) throw new Error(`revoke answered ${revoked.status}`);
        await waitFor(
          async () =>
            (
              await tab
                .getByTestId("signin-error")
                .textContent()
                .catch(() => "")
            )?.includes("session expired"),
          {
            timeoutMs: 15000,
            what: "the sign-in form saying the session expired",
          },
        );
        const atSignIn = requests;
        await tab.waitForTimeout(5000);
        if ((await tab.getByTestId("connection").count()) > 0) throw new Error("the page still shows a connection state");
        if (requests > 6)
          throw new Error(`${requests} API requests after the revoke (${requests - atSignIn} after the sign-in form showed)`);
      } finally {
        await tab.close();
      }
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

    await test("the form refuses a count it cannot place and submits exactly the ticked devices", async () => {
      await page.goto(url("/new"));
      await page.getByTestId("estimate-bytes").waitFor({ timeout: 30000 });
      const count = page.getByLabel("device count");
      await count.fill("9"); // 4 devices here
      const submit = page.getByTestId("submit");
      await waitFor(async () => (await page.getByTestId("use-recommended").textContent()) === "no recommendation", {
        what: "the recommender's answer for 9",
      });
      if (await submit.isEnabled()) throw new Error("Start is enabled for 9 devices on a 4-device node");
      const options = page.locator('[data-testid="gpu-option"] input');
      await options.nth(0).check();
      await options.nth(1).check();
      if ((await count.inputValue()) !== "2" || !(await count.isDisabled())) {
        throw new Error(`with 2 ticked the count field says ${await count.inputValue()} (disabled: ${await count.isDisabled()})`);
      }
      await waitFor(() => submit.isEnabled(), { what: "Start to open for 2 ticked devices" });
    });

    await test("a user fills the form, takes the recommendation, and watches the job succeed", async () => {
      await page.goto(url("/new"));
      await fillForm(page, { steps: 400, count: 2 });
      await shot(page, "new-job.png");
      const formEstimate = await page.getByTestId("estimate-bytes").textContent();
      await page.getByTestId("submit").click();
      const id = await jobIdFromUrl(page);
      // one estimate: the job page shows the figure the form showed, with the same label
      const shown = await page.getByTestId("job-estimate").textContent();
      if (!shown?.startsWith(`${formEstimate} est. (CUDA`)) throw new Error(`the form said ${formEstimate}, the job page says ${shown}`);
      // what was typed is what runs (the API's defaults once overwrote it: 400 became 2400400)
      const submitted = (await server.api(`/api/jobs/${id}`)).body.config;
      if (submitted.steps !== 400 || submitted.batch_size !== 512) {
        throw new Error(`job ${id} runs steps=${submitted.steps}, batch_size=${submitted.batch_size}, not what the form said`);
      }
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

    await test("a kind installed with pip has its own form, runs, and draws its own charts", async () => {
      await page.goto(url("/new"));
      await page.getByLabel("kind", { exact: true }).selectOption("linreg");
      await page.waitForURL(/\/new\?kind=linreg$/);
      // its own fields, labelled by its schema (the sae kind's are gone)
      await page.getByLabel("checkpoint_at_end", { exact: true }).waitFor();
      if ((await page.getByLabel("d_sae", { exact: true }).count()) > 0) throw new Error("the sae fields are still shown");
      await page.getByLabel("steps", { exact: true }).fill("60");
      await page.getByLabel("metrics_interval", { exact: true }).fill("20");
      await page.getByLabel("batch_size", { exact: true }).fill("64");
      await page.getByLabel("device count").fill("2");
      await page.getByTestId("estimate-bytes").waitFor({ timeout: 30000 });
      const use = page.getByTestId("use-recommended");
      await waitFor(async () => (await use.textContent())?.startsWith("Use recommended"), { timeoutMs: 30000, what: "a recommendation" });
      await use.click();
      await waitFor(async () => (await page.locator('[data-testid="gpu-option"] input:checked').count()) === 2, {
        what: "2 selected devices",
      });
      await page.getByTestId("submit").click();
      const id = await jobIdFromUrl(page);
      const job = (await server.api(`/api/jobs/${id}`)).body;
      if (job.kind !== "linreg" || job.config.steps !== 60 || job.config.batch_size !== 64) {
        throw new Error(`job ${id} is ${job.kind} with ${JSON.stringify(job.config)}, not what the form said`);
      }
      await waitFor(async () => (await page.getByTestId("job-status").textContent()) === "succeeded", {
        timeoutMs: JOB_TIMEOUT_MS,
        what: `job ${id} to succeed`,
      });
      const titles = await page.locator(".chart-title").allTextContents();
      if (!titles.includes("Loss") || !titles.includes("Weight error")) throw new Error(`charts: ${titles.join(", ")}`);
      // its metrics (reported at steps 20, 40, 60) drawn on its own chart
      const points = page.locator('[data-testid="weight-chart"] .chart-host');
      await waitFor(async () => Number(await points.getAttribute("data-points")) === 3, { what: "3 points on the weight error chart" });
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
      await other.getByLabel("queue if busy").uncheck(); // queued is the default; this asks for the 409
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
      const longName = (await server.api(`/api/jobs/${longJobId}`)).body.name;
      await waitFor(
        async () => (await page.getByTestId("holder").allTextContents()).some((t) => t.startsWith(`${longName} #${longJobId}`)),
        {
          timeoutMs: 15000,
          what: "the board to show the job holding its device",
        },
      );
      // the per-process view: the job's rank on its device, linked to the job
      await waitFor(async () => (await page.locator(`[data-testid="process"] a[href="/jobs/${longJobId}"]`).count()) > 0, {
        timeoutMs: 20000,
        what: "the job's rank in a device's process list",
      });
      await settleForShot(page, 3000);
      await shot(page, "dashboard.png");
      // the queue page, where the build has one (the scheduler's)
      const queueLink = page.getByRole("link", { name: "Queue", exact: true });
      if ((await queueLink.count()) > 0) {
        await queueLink.click();
        await settleForShot(page, 2000);
        await shot(page, "queue.png");
      }
      await page.goto(url(`/jobs/${longJobId}`));
      await waitFor(async () => ["running", "starting", "queued"].includes(await page.getByTestId("job-status").textContent()), {
        what: "the job to be live",
      });
      // it has reported (so the resume test below has a curve to continue)
      await waitFor(async () => (await server.api(`/api/jobs/${longJobId}/metrics`)).body.items.length > 0, {
        timeoutMs: 60000,
        what: "the long job's first metrics",
      });
      // its ranks' output, tailed while it runs
      await waitFor(async () => ((await page.getByTestId("log-tail").textContent()) ?? "").trim() !== "no output yet", {
        timeoutMs: 20000,
        what: "rank output in the logs panel while the job runs",
      });
      await page.getByTestId("cancel").click();
      await page.getByRole("button", { name: "Keep running" }).click(); // cancel asks first
      await page.getByTestId("cancel").click();
      await page.getByTestId("confirm-cancel").click();
      await waitFor(async () => (await page.getByTestId("job-status").textContent()) === "cancelled", {
        timeoutMs: 60000,
        what: "status cancelled",
      });
      const job = await server.api(`/api/jobs/${longJobId}`);
      if (job.body.status !== "cancelled") throw new Error(`API says ${job.body.status}`);
      // the final checkpoint shows without a reload, and so Resume is offered
      await page.getByTestId("checkpoints").waitFor({ timeout: 15000 });
      await page.getByTestId("resume").waitFor({ timeout: 5000 });
      if ((await page.getByText("running for").count()) > 0) throw new Error("a cancelled job still says 'running for'");
      await page.goto(url("/jobs"));
      await page.getByTestId("job-row").first().waitFor();
      await shot(page, "jobs.png");
    });

    await test("a resumed job links to the job it continues and draws on from its curve", async () => {
      if (longJobId === null) throw new Error("no cancelled job from the previous test");
      await page.goto(url(`/jobs/${longJobId}`));
      const chartPoints = async () => Number(await page.locator('[data-testid="loss-chart"] .chart-host').getAttribute("data-points"));
      const before = await waitFor(async () => ((await chartPoints()) >= 1 ? chartPoints() : 0), {
        timeoutMs: 15000,
        what: "the cancelled job's points on its chart",
      });
      await page.getByTestId("resume").click();
      await page.waitForURL((u) => /\/jobs\/\d+$/.test(u.pathname) && !u.pathname.endsWith(`/${longJobId}`), { timeout: 30000 });
      const link = page.getByTestId("continues");
      await link.waitFor({ timeout: 15000 });
      if ((await link.getAttribute("href")) !== `/jobs/${longJobId}`)
        throw new Error(`continues links to ${await link.getAttribute("href")}`);
      // the earlier curve is there at once, before the resumed job reports anything
      await waitFor(
        async () => Number(await page.locator('[data-testid="loss-chart"] .chart-host').getAttribute("data-points")) >= before,
        {
          timeoutMs: 15000,
          what: "the parent's points on the resumed job's chart",
        },
      );
      await page.getByTestId("cancel").click();
      await page.getByTestId("confirm-cancel").click();
      await waitFor(async () => (await page.getByTestId("job-status").textContent()) === "cancelled", {
        timeoutMs: 60000,
        what: "the resumed job cancelled",
      });
      // run again: the form opens at this job's settings
      await page.getByTestId("run-again").click();
      await page.waitForURL(/\/new\?kind=sae&from=\d+$/);
      const steps = await page.getByLabel("steps", { exact: true }).inputValue();
      if (steps !== "1000000") throw new Error(`run again opened the form with steps=${steps}`);
    });

    await test("the jobs list searches, keeps its filter in the URL, says when nothing matches, and fits a phone", async () => {
      await page.goto(url("/jobs"));
      await page.getByTestId("job-row").first().waitFor({ timeout: 15000 });
      await page.getByLabel("search jobs").fill("no-such-job-name");
      await page.waitForURL(/\/jobs\?q=no-such-job-name$/);
      const empty = await page.getByTestId("jobs-empty").textContent();
      if (!empty?.includes("No jobs match")) throw new Error(`an empty filter says: ${empty}`);
      await page.reload(); // the filter survives a reload (and a shared link)
      if ((await page.getByLabel("search jobs").inputValue()) !== "no-such-job-name") throw new Error("the filter was lost on reload");
      await page.getByRole("button", { name: "Clear the filter." }).click();
      await page.getByTestId("job-row").first().waitFor();
      await page.setViewportSize({ width: 390, height: 844 });
      try {
        for (const path of ["/jobs", "/"]) {
          await page.goto(url(path));
          await page.locator('[data-testid="job-row"], [data-testid="gpu-card"]').first().waitFor({ timeout: 15000 });
          const width = await page.evaluate(() => document.documentElement.scrollWidth);
          if (width > 390) throw new Error(`${path} is ${width} px wide at a 390 px viewport`);
        }
      } finally {
        await page.setViewportSize({ width: 1440, height: 900 });
      }
    });

    await queueTests({ test, page, server, url, shot, jobTimeoutMs: JOB_TIMEOUT_MS });
    await mapTests({ test, page, server, url, shot, jobTimeoutMs: JOB_TIMEOUT_MS });
    await kindsTests({ test, page, server, url, shot, codeRoot: code.dir, jobTimeoutMs: JOB_TIMEOUT_MS });
    await runAgainTests({ test, page, server, url, shot, jobTimeoutMs: JOB_TIMEOUT_MS });
    await sweepTests({ test, page, server, url, shot, jobTimeoutMs: JOB_TIMEOUT_MS });
    await settingsTests({ test, page, server, url, shot });
    await compareTests({ test, page, server, url, shot, jobTimeoutMs: JOB_TIMEOUT_MS });
    await phoneTests({ test, page, server, url, jobTimeoutMs: JOB_TIMEOUT_MS });
    await clusterTests({ test, page, server, url, shot });
    await boardSlurmTests({ test, page, server, url, shot, jobTimeoutMs: JOB_TIMEOUT_MS });
    await sharingTests({ test, page, server, url, shot, jobTimeoutMs: JOB_TIMEOUT_MS });

    await test("no uncaught errors in the page", async () => {
      if (consoleErrors.length > 0) throw new Error(consoleErrors.join("\n"));
    });
  } finally {
    await browser.close();
    // CI keeps nothing but its output: show what the server and the ranks said before the
    // data directory goes.
    if (results.some((r) => !r.ok)) printServerLogs(server.logPath);
    await server.stop();
    plugin.remove();
    code.remove();
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
