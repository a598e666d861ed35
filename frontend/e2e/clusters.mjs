// The new-job form with a Slurm cluster connected. The browser suite has no Slurm: the cluster's
// slurm.conf points nowhere, so its state reads unreachable, which the form must show without
// getting in the way; the job it submits waits, with its cluster set, for the executor.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { waitFor } from "./lib.mjs";

export async function clusterTests({ test, page, server, url, shot }) {
  await test("the form offers a connected Slurm cluster, says it did not answer, and submits a job to it", async () => {
    // a slurm.conf whose controller is nobody (port 9, discard): every command fails to connect
    const conf = join(server.dataDir, "nowhere-slurm.conf");
    writeFileSync(conf, "ClusterName=nowhere\nSlurmctldHost=localhost\nSlurmctldPort=9\n");
    const added = await server.api("/api/clusters", {
      method: "POST",
      body: { name: "nowhere", partitions: ["gpu"], shared_dir: server.dataDir, slurm_conf: conf },
    });
    if (added.status !== 201) throw new Error(`adding the cluster answered ${added.status}: ${JSON.stringify(added.body)}`);

    await page.goto(url("/new"));
    await page.getByTestId("estimate-bytes").waitFor({ timeout: 30000 });
    await page.getByLabel("steps", { exact: true }).fill("50");
    await page.getByLabel("where").selectOption({ label: "Slurm cluster nowhere" });
    const unreachable = page.getByTestId("cluster-unreachable");
    await unreachable.waitFor({ timeout: 15000 }); // the API bounds the read at about 1 s
    const said = await unreachable.textContent();
    if (!said?.startsWith("cluster did not answer: ")) throw new Error(`the form says ${said}`);
    if ((await page.getByTestId("use-recommended").count()) > 0) throw new Error("the device picker still shows");
    if ((await page.getByLabel("partition").inputValue()) !== "gpu") throw new Error("the partition is not the cluster's first");
    await page.getByLabel("GPU count").fill("2");
    await page.getByTestId("cluster-picker").scrollIntoViewIfNeeded();
    await shot(page, "new-job-cluster.png");
    const submit = page.getByTestId("submit");
    await waitFor(() => submit.isEnabled(), { what: "Start to open for the cluster" });
    await submit.click();

    await page.waitForURL(/\/jobs\/\d+$/, { timeout: 30000 });
    const id = Number(page.url().split("/").pop());
    try {
      const job = await server.api(`/api/jobs/${id}`);
      const { status, cluster, devices, slurm } = job.body;
      if (cluster !== "nowhere" || devices.length !== 0 || slurm?.partition !== "gpu") {
        throw new Error(`the job reads ${JSON.stringify({ status, cluster, devices, slurm })}`);
      }
      if (status !== "queued") throw new Error(`the job is ${status}, not waiting for Slurm`);
      const card = page.getByTestId("slurm-card");
      await card.waitFor({ timeout: 15000 });
      if ((await card.getByTestId("slurm-cluster").textContent()) !== "nowhere") throw new Error("the Slurm card names another cluster");
      await page.goto(url("/jobs"));
      const row = page.locator(`[data-testid="job-row"][data-job-id="${id}"]`);
      await row.waitFor({ timeout: 15000 });
      if (!(await row.textContent())?.includes("nowhere (Slurm)")) throw new Error(`the jobs list row says ${await row.textContent()}`);
    } finally {
      await server.api(`/api/jobs/${id}/cancel`, { method: "POST" }); // nothing waits on a cluster that is not there
    }
  });
}
