// Browser test of issue 25: the job page of a finished job, and the pages a phone user reaches
// from it (the jobs list, the new-job form, run again), and a sweep's page, fit a 390 px viewport without a
// horizontal scroll: long names wrap, tables, the facts list, the log view and code blocks
// scroll or wrap inside the page. Called from run.mjs.
import { waitFor } from "./lib.mjs";
import { syntheticSweep } from "./sweeps.mjs";

const PHONE = { width: 390, height: 844 };
const LONG_NAME = "phone-check-a-job-name-with-no-spaces-that-runs-on-past-any-phone-screen-width";

/** The page's width, and the widest elements when it is wider than the viewport. */
async function overflow(page) {
  return page.evaluate((limit) => {
    const width = document.scrollingElement.scrollWidth;
    if (width <= limit) return { width, culprits: [] };
    const culprits = [...document.querySelectorAll("body *")]
      .filter((el) => el.getBoundingClientRect().right > limit)
      .filter((el) => ![...el.children].some((c) => c.getBoundingClientRect().right > limit))
      .slice(0, 6)
      .map((el) => `${el.tagName.toLowerCase()}.${el.className} (${Math.round(el.getBoundingClientRect().right)} px)`);
    return { width, culprits };
  }, PHONE.width);
}

export async function phoneTests({ test, page, server, url, jobTimeoutMs }) {
  await test("on a 390 px phone the job page of a finished job, the jobs list, the new-job form and a sweep scroll only down", async () => {
    const config = { steps: 40, batch_size: 64, metrics_interval: 10, checkpoint_interval: 20 };
    const created = await server.api("/api/jobs", { method: "POST", body: { kind: "sae", config, count: 1, name: LONG_NAME } });
    if (created.status !== 201) throw new Error(`job: ${created.status} ${JSON.stringify(created.body)}`);
    const id = created.body.id;
    await waitFor(async () => (await server.api(`/api/jobs/${id}`)).body.status === "succeeded", {
      timeoutMs: jobTimeoutMs,
      what: `job ${id} to succeed`,
    });
    // a sweep's page (its frontier's axis pickers, its members table), served as the API would
    const sweep = syntheticSweep(999998, 6);
    const sweepRoute = `**/api/sweeps/${sweep.id}`;
    await page.route(sweepRoute, (route) => route.fulfill({ status: 200, contentType: "application/json", body: JSON.stringify(sweep) }));
    await page.setViewportSize(PHONE);
    try {
      const pages = [
        [`/jobs/${id}`, '[data-testid="checkpoints"]'],
        ["/jobs", '[data-testid="job-row"]'],
        ["/new", '[data-testid="estimate-bytes"]'],
        [`/new?kind=sae&from=${id}`, '[data-testid="estimate-bytes"]'],
        [`/sweeps/${sweep.id}`, '[data-testid="member-row"]'],
      ];
      const wide = [];
      for (const [path, ready] of pages) {
        await page.goto(url(path));
        await page.locator(ready).first().waitFor({ timeout: 30000 });
        await page.waitForTimeout(500); // charts and the log view lay out after their data
        const { width, culprits } = await overflow(page);
        if (width > PHONE.width) wide.push(`${path} is ${width} px wide: ${culprits.join(", ")}`);
      }
      if (wide.length > 0) throw new Error(wide.join("\n"));
    } finally {
      await page.unroute(sweepRoute);
      await page.setViewportSize({ width: 1440, height: 900 });
    }
  });
}
