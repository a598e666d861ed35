// Browser test of map jobs (issue 15): a user's function over a JSONL split across two ranks;
// the job page draws one bar per rank, each filling as that rank's chunks are written, and the
// output holds every item. Called from run.mjs, whose server has the code root below.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "./lib.mjs";

const ITEMS = 48;
const CHUNK = 4; // 12 chunks: 6 a rank under `balanced`
// Slow enough per batch that the page sees the bars part-way, fast enough to end in seconds.
const USER_MODULE = `import time

import torch


def square(batch, *, pause_s):
    time.sleep(pause_s)
    return torch.tensor([[r["n"], r["n"] * r["n"]] for r in batch], dtype=torch.int64)
`;

/** A code root holding the user's module; the server is started with it (GPUDECK_SCRIPT_CODE_ROOTS). */
export function mapCodeRoot() {
  const dir = mkdtempSync(join(tmpdir(), "gpudeck-e2e-code-"));
  writeFileSync(join(dir, "e2e_square.py"), USER_MODULE);
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** aria-valuenow and aria-valuemax of rank `rank`'s bar, or null while it is not drawn. */
async function rankBar(page, rank) {
  const bar = page.locator(`[data-testid="rank-${rank}"] [role="progressbar"]`);
  if ((await bar.count()) === 0) return null;
  return { done: Number(await bar.getAttribute("aria-valuenow")), total: Number(await bar.getAttribute("aria-valuemax")) };
}

export async function mapTests({ test, page, server, url, shot, jobTimeoutMs }) {
  await test("a map job draws a bar per rank that fills as its chunks are written", async () => {
    const datasets = join(server.dataDir, "datasets");
    mkdirSync(datasets, { recursive: true });
    const lines = Array.from({ length: ITEMS }, (_, n) => JSON.stringify({ n }));
    writeFileSync(join(datasets, "e2e-items.jsonl"), `${lines.join("\n")}\n`);
    const created = await server.api("/api/jobs", {
      method: "POST",
      body: {
        kind: "map",
        name: "squares",
        count: 2,
        config: {
          function: "e2e_square:square",
          input: "e2e-items.jsonl",
          output: "e2e-squares",
          kwargs: { pause_s: 0.4 },
          map: { strategy: "balanced", chunk_size: CHUNK, batch_size: CHUNK },
        },
      },
    });
    if (created.status !== 201) throw new Error(`map job: ${created.status} ${JSON.stringify(created.body)}`);
    const id = created.body.id;
    await page.goto(url(`/jobs/${id}`));
    // part-way: both ranks drawn, each against its own share, at least one not full yet
    const seen = await waitFor(
      async () => {
        const bars = [await rankBar(page, 0), await rankBar(page, 1)];
        if (bars.some((b) => b === null)) return null;
        return bars.some((b) => b.done > 0 && b.done < b.total) ? bars : null;
      },
      { timeoutMs: jobTimeoutMs, intervalMs: 100, what: "both ranks' bars, part-way" },
    );
    for (const bar of seen) {
      if (bar.total !== ITEMS / CHUNK / 2) throw new Error(`a rank's share is ${bar.total} chunks, not ${ITEMS / CHUNK / 2}`);
    }
    await shot(page, "map-ranks.png");
    await waitFor(async () => (await page.getByTestId("job-status").textContent()) === "succeeded", {
      timeoutMs: jobTimeoutMs,
      what: `map job ${id} to succeed`,
    });
    // the bars end full, without a reload, and so does the job's own bar of chunks written
    await waitFor(
      async () => {
        const bars = [await rankBar(page, 0), await rankBar(page, 1)];
        return bars.every((b) => b !== null && b.done === b.total);
      },
      { timeoutMs: 15000, what: "both bars full" },
    );
    const total = page.getByRole("progressbar", { name: "chunks written" });
    if ((await total.getAttribute("aria-valuenow")) !== String(ITEMS / CHUNK)) {
      throw new Error(`the job's bar ends at ${await total.getAttribute("aria-valuenow")} chunks`);
    }
    const totals = await page.getByTestId("map-total").textContent();
    // an ended job has no rate and nothing left (it read "0.000/s · ETA 0s"), and says where its output went
    if (!totals?.includes(`${ITEMS} items`) || totals.includes("ETA")) throw new Error(`the job's totals say: ${totals}`);
    const where = await page.getByTestId("map-output").textContent();
    if (!where?.includes(join("datasets", "e2e-squares"))) throw new Error(`the output line says: ${where}`);
    // its throughput chart draws a curve, not one point at step 0
    const points = Number(await page.locator(".chart-host").first().getAttribute("data-points"));
    if (!(points >= 2)) throw new Error(`the throughput chart has ${points} points`);
    // and the merged output holds every item, in one chunk file per chunk
    const manifest = JSON.parse(readFileSync(join(datasets, "e2e-squares", "manifest.json"), "utf8"));
    const rows = Object.values(manifest.rows);
    if (manifest.num_chunks !== ITEMS / CHUNK || rows.length !== 1 || rows[0] !== ITEMS) {
      throw new Error(`the output's manifest: ${manifest.num_chunks} chunks, rows ${JSON.stringify(manifest.rows)}`);
    }
  });
}
