// Browser test of a job's settings (issue 36, part A): a member of an lr sweep and a job
// outside any sweep are submitted; the member's page lists every config field with the
// defaults marked and a share of the run in steps, says what it sets differently from its
// sweep's base, and its "diff with job #" names exactly the fields where it and the lone job
// differ; `gpudeck diff` prints the same fields. Called from run.mjs.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { repoDir, waitFor } from "./lib.mjs";

const GPUDECK = process.env.GPUDECK_BIN ?? join(repoDir, ".venv/bin/gpudeck");
// 40 steps: lr_warm_up_steps' default share of 0.05 is 2 steps
const CONFIG = { steps: 40, batch_size: 64, metrics_interval: 10, checkpoint_interval: 20 };

function gpudeck(server, ...args) {
  const env = { ...process.env, GPUDECK_URL: server.baseUrl, ...(server.token ? { GPUDECK_TOKEN: server.token } : {}) };
  return execFileSync(GPUDECK, args, { env, encoding: "utf8", timeout: 60000 });
}

async function submitted(server, path, body) {
  const answer = await server.api(path, { method: "POST", body });
  if (answer.status !== 201) throw new Error(`${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

export async function settingsTests({ test, page, server, url, shot }) {
  await test("settings: a sweep member's page lists every field with defaults marked, its base's differences, and a diff with another job", async () => {
    const sweep = await submitted(server, "/api/sweeps", {
      name: "e2e-settings",
      job: { kind: "sae", config: { ...CONFIG, lr: 0.004 }, count: 1 },
      parameters: { grid: { lr: [0.001] } },
    });
    const member = sweep.members[0].job_id;
    const lone = (await submitted(server, "/api/jobs", { kind: "sae", config: { ...CONFIG, k: 8 }, count: 1, name: "e2e-settings-lone" }))
      .id;

    await page.goto(url(`/jobs/${member}`));
    const card = page.getByTestId("job-settings");
    await card.waitFor({ timeout: 15000 });
    const row = (path) => card.locator(`[data-testid="setting"][data-path="${path}"]`);
    const text = async (path) => (await row(path).textContent())?.replace(/\s+/g, " ").trim();
    const expect = async (path, wanted) => {
      const got = await text(path);
      if (got !== wanted) throw new Error(`setting ${path}: ${JSON.stringify(got)}, wanted ${JSON.stringify(wanted)}`);
    };
    await expect("lr", "lr0.001default 0.004");
    await expect("lr_warm_up_steps", "lr_warm_up_steps0.05 → 2 stepsdefault");
    await expect("dataset.num_features", "dataset.num_features512default");
    // every field of the stored config, none left out
    const job = (await server.api(`/api/jobs/${member}`)).body;
    const leaves = (o) => Object.values(o).reduce((n, v) => n + (v && typeof v === "object" && !Array.isArray(v) ? leaves(v) : 1), 0);
    const shown = await card.getByTestId("setting").count();
    if (shown !== leaves(job.config)) throw new Error(`${shown} settings shown, the config has ${leaves(job.config)} fields`);
    const differences = (await page.getByTestId("sweep-differences").textContent())?.replace(/\s+/g, " ");
    if (!differences?.includes(`sweep #${sweep.id}'s base in lr 0.001 (base 0.004)`)) throw new Error(`sweep differences: ${differences}`);

    await page.getByLabel("job to diff with").fill(String(lone));
    await page.getByRole("button", { name: "Diff" }).click();
    const diffRows = page.getByTestId("diff-field");
    await waitFor(async () => (await diffRows.count()) > 0, { what: "the diff's rows" });
    const paths = await diffRows.evaluateAll((trs) => trs.map((tr) => tr.dataset.path));
    if (paths.join() !== "k,lr") throw new Error(`the diff lists ${paths}, wanted k,lr`);
    await shot(page, "job-settings.png");

    const printed = gpudeck(server, "diff", String(member), String(lone));
    const fields = printed
      .split("\n")
      .map(
        (l) =>
          l
            .replace(/[\u2500-\u257f]/g, " ")
            .trim()
            .split(/\s+/)[0],
      )
      .filter((w) => w === "k" || w === "lr");
    if (fields.join() !== "k,lr" || !/^2 fields differ; \d+ the same$/m.test(printed)) throw new Error(`gpudeck diff printed:\n${printed}`);
  });
}
