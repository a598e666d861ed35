// Browser test of sharing a device by memory (issue 37): an admin lets the node share, two
// sharing jobs land on one device, and the board draws that device's reservations as two
// segments, one per job. Called from run.mjs, last: it turns sharing off again after.
import { execFileSync } from "node:child_process";
import { PYTHON, repoDir, waitFor } from "./lib.mjs";

const SMALL = { steps: 1000000, batch_size: 512 };

/** `gpudeck nodes sharing NODE --on|--off` against the server's database, as an admin would. */
function nodeSharing(server, node, flag) {
  const env = { ...process.env, GPUDECK_DATA_DIR: server.dataDir };
  delete env.GPUDECK_DATABASE_URL;
  delete env.GPUDECK_REDIS_URL;
  if (process.env.E2E_DATABASE_URL) env.GPUDECK_DATABASE_URL = process.env.E2E_DATABASE_URL;
  return execFileSync(PYTHON, ["-m", "gpudeck", "nodes", "sharing", node, flag], { cwd: repoDir, env, encoding: "utf8" });
}

export async function sharingTests({ test, page, server, url, shot, jobTimeoutMs }) {
  await test("two jobs sharing a device by memory show as two segments of its bar", async () => {
    const [node] = (await server.api("/api/nodes")).body;
    const said = nodeSharing(server, node.name, "--on");
    if (!said.includes("sharing on")) throw new Error(`gpudeck nodes sharing said: ${said}`);
    const device = (await server.api("/api/gpus")).body.find((g) => g.index === 3);
    const ids = [];
    try {
      for (const name of ["share-a", "share-b"]) {
        const created = await server.api("/api/jobs", {
          method: "POST",
          body: { kind: "sae", config: SMALL, devices: [{ index: 3 }], name, share: "memory" },
        });
        if (created.status !== 201) throw new Error(`${name}: ${created.status} ${JSON.stringify(created.body)}`);
        ids.push(created.body.id);
      }
      await page.goto(url("/"));
      const card = page.locator(`[data-testid="gpu-card"][data-uuid="${device.uuid}"]`);
      const segments = card.getByTestId("reservation-segment");
      await waitFor(async () => (await segments.count()) === 2, { timeoutMs: 30000, what: "two reservation segments" });
      const titles = await segments.evaluateAll((els) => els.map((e) => e.getAttribute("title")));
      ids.forEach((id, i) => {
        if (!titles[i]?.startsWith(`share-${"ab"[i]} #${id} · `)) throw new Error(`segment ${i} says ${titles[i]}`);
      });
      if ((await card.getByTestId("reservation-free").count()) !== 1) throw new Error("no free remainder drawn");
      if ((await card.getByTestId("shareable").count()) !== 1) throw new Error("the card is not marked shareable");
      await card.scrollIntoViewIfNeeded();
      await shot(page, "board-sharing.png");
    } finally {
      for (const id of ids) await server.api(`/api/jobs/${id}/cancel`, { method: "POST" });
      await waitFor(
        async () => {
          const gpus = (await server.api("/api/gpus")).body;
          return (gpus.find((g) => g.index === 3)?.reservations ?? []).length === 0;
        },
        { timeoutMs: jobTimeoutMs, what: "the shared device to be free" },
      ).catch(() => {});
      nodeSharing(server, node.name, "--off");
    }
  });
}
