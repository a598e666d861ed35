// Browser test of comparing runs and tags (issue 36): two members of an lr sweep and a job
// outside any sweep finish; `gpudeck tag` tags the lone one, and the jobs list's tag filter and
// the API find the same job; the three are ticked in the jobs list and compared: their
// settings side by side with lr marked as differing, one metric's curves overlaid, and the
// URL reopening the same view. Called from run.mjs.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { repoDir, waitFor } from "./lib.mjs";

const GPUDECK = process.env.GPUDECK_BIN ?? join(repoDir, ".venv/bin/gpudeck");
const CONFIG = { steps: 40, batch_size: 64, metrics_interval: 10, checkpoint_interval: 20 };

/** `gpudeck ARGS` against the e2e server, as a user at a terminal runs it. */
function gpudeck(server, ...args) {
  const env = { ...process.env, GPUDECK_URL: server.baseUrl, ...(server.token ? { GPUDECK_TOKEN: server.token } : {}) };
  return execFileSync(GPUDECK, args, { env, encoding: "utf8", timeout: 60000 });
}

async function threeFinishedJobs(server, jobTimeoutMs) {
  const sweep = await server.api("/api/sweeps", {
    method: "POST",
    body: { name: "e2e-cmp", job: { kind: "sae", config: CONFIG, count: 1 }, parameters: { grid: { lr: [0.001, 0.004] } } },
  });
  if (sweep.status !== 201) throw new Error(`sweep: ${sweep.status} ${JSON.stringify(sweep.body)}`);
  const lone = await server.api("/api/jobs", {
    method: "POST",
    body: { kind: "sae", config: { ...CONFIG, lr: 0.002 }, count: 1, name: "e2e-lone" },
  });
  if (lone.status !== 201) throw new Error(`job: ${lone.status} ${JSON.stringify(lone.body)}`);
  const ids = [...sweep.body.members.map((m) => m.job_id), lone.body.id];
  await waitFor(
    async () => (await server.api(`/api/jobs?${ids.map((id) => `id=${id}`).join("&")}`)).body.items.every((j) => j.status === "succeeded"),
    {
      timeoutMs: jobTimeoutMs,
      what: `jobs ${ids.join(", ")} to succeed`,
    },
  );
  return { members: ids.slice(0, 2), lone: lone.body.id };
}

export async function compareTests({ test, page, server, url, shot, jobTimeoutMs }) {
  await test("compare: gpudeck tag, the tag filter and the API agree; 3 ticked jobs (one outside any sweep) side by side, by URL", async () => {
    const { members, lone } = await threeFinishedJobs(server, jobTimeoutMs);
    const tagged = gpudeck(server, "tag", String(lone), "baseline");
    if (!tagged.includes(`job ${lone} tags: baseline`)) throw new Error(`gpudeck tag printed: ${tagged}`);
    const byApi = (await server.api("/api/jobs?tag=baseline")).body.items.map((j) => j.id);
    if (byApi.join() !== String(lone)) throw new Error(`the API's ?tag=baseline lists ${byApi}`);

    await page.goto(url("/jobs"));
    await page.getByTestId("job-row").first().waitFor({ timeout: 15000 });
    await page.getByLabel("tag filter").selectOption("baseline");
    await page.waitForURL(/\/jobs\?tag=baseline$/);
    const rows = async () => page.$$eval('[data-testid="job-row"]', (trs) => trs.map((tr) => Number(tr.dataset.jobId)));
    await waitFor(async () => (await rows()).join() === String(lone), { what: `only job ${lone} under tag baseline` });
    await page.getByLabel("tag filter").selectOption("");

    for (const id of [lone, ...members]) await page.getByLabel(`compare job ${id}`, { exact: true }).check();
    await shot(page, "jobs-ticked.png");
    await page.getByTestId("compare-link").click();
    const expected = `/compare?jobs=${[lone, ...members].join(",")}`;
    await page.waitForURL((u) => u.pathname + u.search === expected, { timeout: 15000 });

    const check = async () => {
      const differing = page.locator('[data-testid="compare-configs"] tr[data-differs] th');
      await waitFor(async () => (await differing.allTextContents()).some((t) => t.trim() === "≠ lr"), { what: "lr marked as differing" });
      const marked = (await differing.allTextContents()).map((t) => t.replace("≠", "").trim());
      if (marked.includes("steps")) throw new Error(`steps (alike) is marked as differing: ${marked}`);
      const heads = await page.locator('[data-testid="compare-configs"] thead th').allTextContents();
      if (heads.length !== 4) throw new Error(`the settings table has columns ${heads}`);
      const points = page.locator('[data-testid="compare-chart"] .chart-host');
      await waitFor(async () => Number(await points.getAttribute("data-points").catch(() => "0")) >= 4, { what: "the curves overlaid" });
      if ((await page.getByLabel("curve metric").inputValue()) === "") throw new Error("no metric chosen for the curves");
    };
    await check();
    await page.getByTestId("compare-curves").scrollIntoViewIfNeeded();
    await shot(page, "compare.png");
    await page.reload(); // the URL is the view: a shared link opens the same comparison
    await check();
  });
}
