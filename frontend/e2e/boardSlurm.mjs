// The board with a real Slurm cluster connected: the backend tests' cluster (two nodes of two
// fake h100 each, backend/tests/slurm/serve_cluster.py) holding a Slurm job that is not
// GPUDeck's on one node and a GPUDeck job on the other. The board must show the cluster as a
// group after the own nodes, each node's GPUs in use or free with who holds them, and say that
// their figures are not measured. Skipped (and said so) where Slurm is not installed.
import { execFileSync, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { PYTHON, repoDir, waitFor } from "./lib.mjs";

const SAE_CONFIG = {
  d_in: 16,
  d_sae: 64,
  batch_size: 64,
  steps: 1000000, // runs until cancelled
  metrics_interval: 50,
  checkpoint_interval: 1000000,
  seed: 1,
  dataset: { type: "synthetic", num_features: 32, active_features: 3, num_samples: 100000 },
};

/** The test cluster, started; `stop()` closes its standard input, which stops it. */
async function startSlurm() {
  const child = spawn(PYTHON, [join(repoDir, "backend/tests/slurm/serve_cluster.py")], {
    env: { ...process.env, PYTHONPATH: join(repoDir, "backend/tests") },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const [line] = await Promise.race([
    (async () => {
      for await (const l of createInterface({ input: child.stdout })) return [l];
      return [null];
    })(),
    exited.then(() => [null]),
  ]);
  if (line === null) throw new Error("the test cluster did not start (its output is above)");
  const facts = JSON.parse(line);
  const stop = async () => {
    child.stdin.end();
    await exited;
  };
  return { ...facts, stop };
}

export async function boardSlurmTests({ test, page, server, url, shot, jobTimeoutMs }) {
  await test("the board shows a Slurm cluster's nodes after GPUDeck's, each GPU in use or free and who holds it", async () => {
    const slurm = await startSlurm();
    if (slurm.skip) {
      console.log(`  (skipped: ${slurm.skip})`);
      return;
    }
    let foreign = null;
    let jobId = null;
    try {
      const env = { ...process.env, SLURM_CONF: slurm.conf };
      const added = await server.api("/api/clusters", {
        method: "POST",
        body: { name: "lab", partitions: [slurm.partition], shared_dir: server.dataDir, slurm_conf: slurm.conf },
      });
      if (added.status !== 201) throw new Error(`adding the cluster answered ${added.status}: ${JSON.stringify(added.body)}`);
      // someone else's Slurm job on one node's two GPUs
      foreign = execFileSync(
        "sbatch",
        ["--parsable", `--partition=${slurm.partition}`, `--gres=gpu:${slurm.gpu_type}:2`, "--output=/dev/null", "--wrap", "sleep 600"],
        { env, encoding: "utf8" },
      ).trim();
      // then GPUDeck's job, which Slurm can only place on the other node
      const submitted = await server.api("/api/jobs", {
        method: "POST",
        body: { kind: "sae", name: "sae-on-lab", config: SAE_CONFIG, count: 2, cluster: "lab" },
      });
      if (submitted.status !== 201) throw new Error(`the submit answered ${submitted.status}: ${JSON.stringify(submitted.body)}`);
      jobId = submitted.body.id;
      await waitFor(async () => (await server.api(`/api/jobs/${jobId}`)).body.status === "running", {
        timeoutMs: jobTimeoutMs,
        what: "the cluster job to run",
      });

      await page.goto(url("/"));
      const group = page.locator('[data-testid="cluster-group"][data-cluster="lab"]');
      await group.waitFor({ timeout: 15000 });
      const title = await group.locator(".node-title").textContent();
      if (!title?.includes("Slurm cluster") || !title.includes("access local")) throw new Error(`the group is titled ${title}`);
      const note = await group.getByTestId("cluster-note").textContent();
      if (!note?.includes("not measured by GPUDeck")) throw new Error(`the group's note says ${note}`);
      // the own nodes come first
      const order = await page.locator("section.node-group").evaluateAll((s) => s.map((e) => e.dataset.cluster ?? "own"));
      if (order[0] !== "own" || !order.includes("lab")) throw new Error(`the board's groups are ${order}`);

      // the board follows the cluster (re-read every 10 s): GPUDeck's job on one node, linked
      const ours = group.locator('[data-testid="cluster-gpu"][data-in-use="true"]').getByRole("link", { name: "sae-on-lab" });
      await ours.first().waitFor({ timeout: 30000 });
      if ((await ours.count()) !== 2) throw new Error(`${await ours.count()} GPUs name the GPUDeck job`);
      const href = await ours.first().getAttribute("href");
      if (href !== `/jobs/${jobId}`) throw new Error(`the job's link goes to ${href}`);
      const theirs = group.locator('[data-testid="cluster-gpu"][data-in-use="true"]', { hasText: "other Slurm job" });
      if ((await theirs.count()) !== 2) throw new Error(`${await theirs.count()} GPUs say another Slurm job holds them`);
      const states = await group.getByTestId("node-state").allTextContents();
      if (states.length !== 2 || states.some((s) => !/alloc|mix/.test(s))) throw new Error(`the nodes read ${states}`);
      if ((await group.getByTestId("gpu-card").count()) !== 0) throw new Error("a cluster GPU is drawn with telemetry figures");
      await group.scrollIntoViewIfNeeded();
      await shot(page, "board-slurm.png");

      // a cluster that does not answer (the earlier test's "nowhere", when it ran) says since when
      const nowhere = page.locator('[data-testid="cluster-group"][data-cluster="nowhere"]');
      if ((await nowhere.count()) > 0) {
        const since = await nowhere.getByTestId("cluster-unreachable-since").textContent({ timeout: 15000 });
        if (!since?.startsWith("unreachable since ")) throw new Error(`the unreachable cluster says ${since}`);
        await nowhere.scrollIntoViewIfNeeded();
        await shot(page, "board-slurm-unreachable.png");
      }

      await page.getByRole("link", { name: "sae-on-lab" }).first().click();
      await page.waitForURL(new RegExp(`/jobs/${jobId}$`));
    } finally {
      if (jobId !== null) await server.api(`/api/jobs/${jobId}/cancel`, { method: "POST" });
      if (foreign) execFileSync("scancel", [foreign], { env: { ...process.env, SLURM_CONF: slurm.conf } });
      await slurm.stop();
    }
  });
}
