// Browser tests of sweeps (issue 27): an SAE sweep over k started from the new-job form,
// watched on its page until every member succeeds, its frontier checked (more active latents,
// more variance explained) and linked to the members; a random sweep and an in-step (zip) one
// from the form, their members on the sweep page; and the sweep page with 1,000 stubbed
// members, timing the scatter's draw; the finished sweep read against k (issue 36: the best
// member, the edge callout as the API words it, parallel coordinates). Called from run.mjs.
import { waitFor } from "./lib.mjs";

const KS = [2, 4, 8, 16];
const field = (page, label) => page.getByLabel(label, { exact: true });

/** 1,000 finished SAE members: L0 near k, explained variance rising with it, some noise. */
export function syntheticSweep(id, n = 1000) {
  const members = Array.from({ length: n }, (_, i) => {
    const k = 1 + (i % 64);
    const noise = ((i * 7919) % 1000) / 1000;
    return {
      job_id: 100000 + i,
      index: i,
      params: { k, lr: 0.001 * (1 + Math.floor(i / 64)) },
      name: `big-${i}`,
      status: "succeeded",
      progress: { step: 60, total: 60 },
      error_summary: null,
      metrics: { overall_loss: 1 / k + noise / 10, l0: k + noise, explained_variance: 1 - 1 / (k + 1) - noise / 5 },
      started_at: "2026-11-26T05:00:00Z",
      finished_at: "2026-11-26T05:01:00Z",
    };
  });
  return {
    id,
    name: "thousand",
    owner: "admin",
    kind: "sae",
    max_parallel: 8,
    created_at: "2026-11-26T05:00:00Z",
    spec: { parameters: { grid: { k: [], lr: [] } } },
    counts: { succeeded: n },
    largest_estimate_bytes: 1024 ** 2,
    members,
  };
}

async function fillSweepForm(page) {
  await page.locator(".job-form").waitFor({ timeout: 30000 });
  await field(page, "name").fill("e2e-ks");
  await field(page, "steps").fill("60");
  await field(page, "d_in").fill("16");
  await field(page, "d_sae").fill("64");
  await field(page, "batch size").fill("64");
  await field(page, "metrics every").fill("10");
  await field(page, "checkpoint every").fill("60");
  await field(page, "true features").fill("32");
  await field(page, "samples").fill("20000");
  await field(page, "sweep").check();
  await page.getByLabel("sweep field 1").selectOption("k");
  await page.getByLabel("sweep values 1").fill(KS.join(", "));
  await field(page, "max parallel").fill("2");
}

/** Sweep row n: its field, how it varies ("grid", "zip", "random") and its values or draw. */
async function setRow(page, n, { path, how, values, distribution, low, high }) {
  if (n > (await page.getByTestId("sweep-row").count())) await page.getByRole("button", { name: "+ add a field" }).click();
  await page.getByLabel(`sweep field ${n}`).selectOption(path);
  await page.getByLabel(`sweep how ${n}`).selectOption(how);
  if (distribution) await page.getByLabel(`sweep distribution ${n}`).selectOption(distribution);
  if (values !== undefined) await page.getByLabel(`sweep values ${n}`).fill(values);
  if (low !== undefined) await page.getByLabel(`sweep low ${n}`).fill(low);
  if (high !== undefined) await page.getByLabel(`sweep high ${n}`).fill(high);
}

/** Start the sweep the form shows (its button saying `members`); its members as the API lists them. */
async function startSweep(page, server, members) {
  const submit = page.getByTestId("submit");
  const label = `Start sweep · ${members} members`;
  await waitFor(async () => (await submit.isEnabled()) && (await submit.textContent()) === label, { timeoutMs: 30000, what: label });
  await submit.click();
  await page.waitForURL(/\/sweeps\/\d+$/, { timeout: 30000 });
  const id = Number(page.url().split("/").pop());
  await waitFor(async () => (await page.getByTestId("member-row").count()) === members, { what: `${members} rows on sweep ${id}'s page` });
  const sweep = (await server.api(`/api/sweeps/${id}`)).body;
  await server.api(`/api/sweeps/${id}/cancel`, { method: "POST" }); // seen: they need not train
  return sweep.members.map((m) => m.params);
}

export async function sweepTests({ test, page, server, url, shot, jobTimeoutMs }) {
  let sweepId = null;
  await test("a sweep from the form: SAE over k in {2, 4, 8, 16}, 2 at a time, each succeeds, its frontier monotone and linked", async () => {
    await page.goto(url("/new"));
    await fillSweepForm(page);
    // a bad member first: the API's 422 names it beside the field it varies, and nothing is created
    await page.getByLabel("sweep values 1").fill("2, 65");
    const submit = page.getByTestId("submit");
    await waitFor(async () => (await submit.isEnabled()) && (await submit.textContent()) === "Start sweep · 2 members", {
      timeoutMs: 30000,
      what: "Start sweep · 2 members, enabled",
    });
    const before = (await server.api("/api/sweeps")).body.length;
    await submit.click();
    const refused = page.getByTestId("sweep-member-error");
    await refused.waitFor({ timeout: 15000 });
    if (!/member 1: k=65/.test(await refused.textContent())) throw new Error(`the 422 says: ${await refused.textContent()}`);
    if ((await server.api("/api/sweeps")).body.length !== before) throw new Error("a refused sweep was created");
    await page.getByLabel("sweep values 1").fill(KS.join(", "));
    const count = await page.getByTestId("sweep-count").textContent();
    if (count !== "4 members") throw new Error(`the form says ${count}`);
    await waitFor(async () => (await submit.isEnabled()) && (await submit.textContent()) === "Start sweep · 4 members", {
      timeoutMs: 30000,
      what: "Start sweep · 4 members, enabled",
    });
    await submit.click();
    await page.waitForURL(/\/sweeps\/\d+$/, { timeout: 30000 }).catch(async () => {
      const errors = await page.locator('[role="alert"], .field-error, .banner.error').allTextContents();
      throw new Error(`the sweep was not submitted: ${errors.join(" | ") || "(no message)"}`);
    });
    sweepId = Number(page.url().split("/").pop());
    const spec = (await server.api(`/api/sweeps/${sweepId}`)).body;
    const ks = spec.members.map((m) => m.params.k).join(",");
    if (ks !== KS.join(",") || spec.max_parallel !== 2) throw new Error(`the sweep runs k=${ks}, max_parallel ${spec.max_parallel}`);
    // the page polls until every member ended; meanwhile, never more than 2 training at once
    let most = 0;
    await waitFor(
      async () => {
        const sweep = (await server.api(`/api/sweeps/${sweepId}`)).body;
        // a member past its last step is finishing (its devices are being released): the
        // scheduler no longer counts it, and the next may start
        const training = sweep.members.filter((m) => m.status === "running" && !(m.progress.total && m.progress.step >= m.progress.total));
        most = Math.max(most, training.length);
        const bad = sweep.members.find((m) => ["failed", "cancelled", "lost", "timeout"].includes(m.status));
        if (bad) throw new Error(`member ${bad.index} ${bad.status}: ${bad.error_summary}`);
        return (await page.getByTestId("sweep-page").getAttribute("data-ended")) === "true";
      },
      { timeoutMs: jobTimeoutMs, intervalMs: 500, what: `sweep ${sweepId}'s members to succeed` },
    );
    if (most > 2) throw new Error(`${most} members trained at once (max_parallel 2)`);
    const points = page.getByTestId("frontier-point");
    await waitFor(async () => (await points.count()) >= 2, { timeoutMs: 15000, what: "the frontier drawn" });
    const frontier = await points.evaluateAll((links) =>
      links.map((a) => ({
        x: Number(a.dataset.x),
        y: Number(a.dataset.y),
        href: a.getAttribute("href"),
        px: Number(a.dataset.px),
        py: Number(a.dataset.py),
      })),
    );
    const members = new Set(spec.members.map((m) => `/jobs/${m.job_id}`));
    frontier.forEach((p, i) => {
      if (!members.has(p.href)) throw new Error(`frontier point ${i} links to ${p.href}, not a member`);
      const prev = frontier[i - 1];
      if (prev && !(p.x > prev.x && p.y > prev.y))
        throw new Error(`the frontier is not monotone: ${JSON.stringify(frontier.map(({ x, y }) => [x, y]))}`);
    });
    const rows = await page
      .getByTestId("member-row")
      .evaluateAll((trs) => trs.map((tr) => [tr.dataset.jobId, tr.querySelector('[data-testid="member-link"]')?.getAttribute("href")]));
    if (rows.length !== 4 || rows.some(([id, href]) => href !== `/jobs/${id}`)) throw new Error(`the rows link to ${JSON.stringify(rows)}`);
    // the metric against the setting (issue 36): the API's best member named and linked, k's trend
    // and, as more latents explain more variance, the best k the largest searched: "widen it"
    const analysis = (await server.api(`/api/sweeps/${sweepId}/analysis`)).body;
    const best = page.getByTestId("best-member");
    await waitFor(async () => (await best.getAttribute("data-job-id")) === String(analysis.best_job_id), {
      timeoutMs: 15000,
      what: `the best member, job ${analysis.best_job_id}, named on the page`,
    });
    if ((await best.getByRole("link").getAttribute("href")) !== `/jobs/${analysis.best_job_id}`)
      throw new Error("the best member is not linked");
    if ((await page.getByLabel("parameter", { exact: true }).inputValue()) !== "k") throw new Error("the card does not plot against k");
    const k = analysis.parameters.find((p) => p.path === "k");
    const callouts = await page.getByTestId("edge-callout").allTextContents();
    if (k.note ? !callouts.includes(k.note) : callouts.length > 0)
      throw new Error(`the API says ${k.note}, the page ${callouts.join(" | ")}`);
    if ((await page.getByTestId("parallel-line").count()) !== 4) throw new Error("not one parallel-coordinates line per member");
    await page.getByTestId("parameter-card").scrollIntoViewIfNeeded();
    await shot(page, "sweep-parameter.png");
    // the curves of the members ticked, one chart
    for (const k of [0, 3]) await page.getByLabel(`draw member ${k}`).check();
    await waitFor(async () => Number(await page.locator('[data-testid="curves-chart"] .chart-host').getAttribute("data-points")) >= 2, {
      timeoutMs: 15000,
      what: "the ticked members' curves",
    });
    await page.evaluate(() => window.scrollTo(0, 0));
    await shot(page, "sweep.png");
    // a point on the canvas opens its member, whose page links back to the sweep
    const first = frontier[0];
    await page
      .getByTestId("frontier-card")
      .getByTestId("sweep-scatter")
      .locator("canvas")
      .click({ position: { x: first.px, y: first.py } });
    await page.waitForURL((u) => u.pathname === first.href, { timeout: 10000 });
    const membership = page.getByTestId("sweep-membership");
    await waitFor(async () => /^member \d+ of sweep #\d+ \(k=\d+\)/.test((await membership.textContent()) ?? ""), {
      what: "'member N of sweep #M (k=..)' on the member's page",
    });
    if ((await membership.getByRole("link").getAttribute("href")) !== `/sweeps/${sweepId}`)
      throw new Error("the member's page does not link to its sweep");
    await page.goto(url("/jobs"));
    const badge = page.locator('[data-testid="sweep-badge"]').first();
    await badge.waitFor({ timeout: 15000 });
    if ((await badge.getAttribute("href")) !== `/sweeps/${sweepId}`)
      throw new Error(`the jobs list's badge links to ${await badge.getAttribute("href")}`);
    await page.goto(url("/sweeps"));
    const row = page.locator(`[data-testid="sweep-row"][data-sweep-id="${sweepId}"]`);
    await row.waitFor({ timeout: 15000 });
    if (!(await row.textContent()).includes("4 succeeded")) throw new Error(`the Sweeps list says ${await row.textContent()}`);
  });

  await test("a random sweep and an in-step sweep from the form: their members on the sweep page", async () => {
    await page.goto(url("/new"));
    await fillSweepForm(page);
    await setRow(page, 1, { path: "lr", how: "random", distribution: "log_uniform", low: "0", high: "1e-2" });
    const row1 = page.getByTestId("sweep-row").first();
    if (!/needs low above 0/.test(await row1.textContent())) throw new Error(`row 1 says ${await row1.textContent()}`);
    await page.getByLabel("sweep low 1").fill("1e-4");
    await setRow(page, 2, { path: "k", how: "random", low: "2", high: "16" }); // an int field: drawn as a whole number
    await field(page, "draws").fill("3");
    await field(page, "draw seed").fill("5");
    await shot(page, "sweep-random-form.png");
    // the draws previewed before launch (issue 36) are those the sweep then makes
    const preview = page.locator('[data-testid="sweep-draws-row"][data-path="lr"]');
    await waitFor(async () => /^lr drawn: /.test((await preview.textContent().catch(() => "")) ?? ""), { what: "the lr draws previewed" });
    const previewed = await preview.textContent();
    const drawn = await startSweep(page, server, 3);
    const made = `lr drawn: ${drawn.map((p) => String(Number(p.lr.toPrecision(3)))).join(", ")}`;
    if (previewed !== made) throw new Error(`the form previewed "${previewed}", the sweep drew "${made}"`);
    const bad = drawn.find((p) => !(p.lr >= 1e-4 && p.lr <= 1e-2 && Number.isInteger(p.k) && p.k >= 2 && p.k <= 16));
    if (bad) throw new Error(`a member drew ${JSON.stringify(bad)}`);

    await page.goto(url("/new"));
    await fillSweepForm(page);
    await setRow(page, 1, { path: "d_in", how: "zip", values: "16, 32" });
    await setRow(page, 2, { path: "d_sae", how: "zip", values: "64, 128, 256" });
    const uneven = page.getByTestId("sweep-row").nth(1).getByRole("alert");
    if (!/d_in has 2, d_sae has 3/.test(await uneven.textContent())) throw new Error(`the form says ${await uneven.textContent()}`);
    await page.getByLabel("sweep values 2").fill("64, 128");
    await setRow(page, 3, { path: "k", how: "grid", values: "2, 4" });
    const zipped = await startSweep(page, server, 4);
    const pairs = zipped.map((p) => `${p.d_in}/${p.d_sae}/${p.k}`).join(" ");
    if (pairs !== "16/64/2 32/128/2 16/64/4 32/128/4") throw new Error(`the members are ${pairs}`);
  });

  await test("the sweep page with 1,000 members draws its scatter in under a second", async () => {
    const id = 999999;
    const body = JSON.stringify(syntheticSweep(id));
    await page.route(`**/api/sweeps/${id}`, (route) => route.fulfill({ status: 200, contentType: "application/json", body }));
    try {
      await page.goto(url(`/sweeps/${id}`));
      const canvas = page.getByTestId("frontier-card").getByTestId("sweep-scatter").locator("canvas");
      await waitFor(
        async () => (await canvas.getAttribute("data-points")) === "1000" && (await canvas.getAttribute("data-draw-ms")) !== null,
        {
          timeoutMs: 20000,
          what: "1,000 points drawn",
        },
      );
      const draw = Number(await canvas.getAttribute("data-draw-ms"));
      // from navigation to the scatter drawn: fetch, parse, the table's first rows, the canvas
      const shown = await page.evaluate(() => {
        const m = performance.getEntriesByName("sweep-scatter-draw").at(-1);
        return m ? m.startTime + m.duration : null;
      });
      // a new pair of axes: the frontier and the canvas again, timed from the change
      const before = await canvas.getAttribute("data-draw-ms");
      const started = Date.now();
      await page.getByLabel("x metric").selectOption("overall_loss");
      await waitFor(async () => (await canvas.getAttribute("data-draw-ms")) !== before || Date.now() - started > 2000, {
        what: "a redraw",
      });
      const redraw = Date.now() - started;
      console.log(
        `        scatter of 1,000 members: drawn in ${draw.toFixed(1)} ms; page shown with it ${Math.round(shown)} ms after navigation; new axes in ${redraw} ms`,
      );
      if (!(draw < 1000)) throw new Error(`the scatter took ${draw} ms to draw`);
      if (redraw >= 1000) throw new Error(`changing the axes took ${redraw} ms`);
    } finally {
      await page.unroute(`**/api/sweeps/${id}`);
    }
  });
}
