// Browser test of the new-job form over every kind (issue 25, section 1): a user submits one job
// of each built-in kind (sae, activations, script, map) and of the example plugin kind (linreg)
// from the form alone, filling list rows (a script's args), key/value rows (its env, a map's
// kwargs) and required paths, and watches each succeed. Called from run.mjs, whose server has
// the code root below and E2E_GREETING on its environment allow-list.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PYTHON, waitFor } from "./lib.mjs";

export const SCRIPT_ENV = "E2E_GREETING";

// The script checks that its argv and environment arrived as lists and names, not as strings.
const USER_SCRIPT = `import os
import sys

assert sys.argv[1:] == ["--steps", "3"], sys.argv
assert os.environ["${SCRIPT_ENV}"] == "hello world", os.environ.get("${SCRIPT_ENV}")
print("script ran with", sys.argv[1:])
`;

/** A tiny random GPT-2 under <data_dir>/models and token ids under datasets, for activations. */
function makeActivationsInputs(dataDir) {
  const code = `
import sys, numpy as np, torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=100, n_positions=64, bos_token_id=0, eos_token_id=0)
GPT2LMHeadModel(config).save_pretrained(sys.argv[1] + "/models/e2e-gpt2")
np.save(sys.argv[1] + "/datasets/e2e-ids.npy", np.random.default_rng(1).integers(0, 100, size=(32, 16), dtype=np.int64))
`;
  mkdirSync(join(dataDir, "models"), { recursive: true });
  mkdirSync(join(dataDir, "datasets"), { recursive: true });
  execFileSync(PYTHON, ["-c", code, dataDir], { stdio: ["ignore", "ignore", "inherit"] });
}

/** Adds a row to a list or map field and fills it: `[value]` or `[name, value]`. */
async function addRow(page, path, cells) {
  const rows = page.locator(`[data-rows="${path}"]`);
  await rows.getByRole("button", { name: /^\+ add/ }).click();
  const inputs = rows.locator(".row").last().locator("input");
  for (const [i, text] of cells.entries()) await inputs.nth(i).fill(text);
}

const field = (page, label) => page.getByLabel(label, { exact: true });

/** Each kind: what the user types into its form, and what the submitted config must then hold. */
const KINDS = [
  {
    kind: "sae",
    fill: async (page) => {
      await field(page, "steps").fill("60");
      await field(page, "checkpoint every").fill("30");
    },
    check: (config) => config.steps === 60 && config.checkpoint_interval === 30,
  },
  {
    kind: "activations",
    fill: async (page) => {
      await field(page, "model").fill("e2e-gpt2");
      await field(page, "input").fill("e2e-ids.npy");
      await field(page, "hook").fill("transformer.h.0");
      await field(page, "output").fill("e2e-kinds-acts");
      await field(page, "context_length").fill("16");
    },
    check: (config) => config.model === "e2e-gpt2" && config.context_length === 16,
  },
  {
    kind: "script",
    fill: async (page) => {
      await field(page, "entry point").fill("e2e_hello.py");
      await addRow(page, "args", ["--steps"]);
      await addRow(page, "args", ["3"]);
      await addRow(page, "env", [SCRIPT_ENV, "hello world"]);
    },
    check: (config) => JSON.stringify(config.args) === '["--steps","3"]' && config.env[SCRIPT_ENV] === "hello world",
  },
  {
    kind: "map",
    fill: async (page) => {
      await field(page, "function").fill("e2e_square:square");
      await field(page, "input").fill("e2e-kinds-items.jsonl");
      await field(page, "output").fill("e2e-kinds-squares");
      await addRow(page, "kwargs", ["pause_s", "0"]);
      await field(page, "chunk_size").fill("4");
      await field(page, "batch_size").fill("4"); // "auto" needs a memory estimate, which a map function has none of
    },
    check: (config) => config.kwargs.pause_s === 0 && config.map.batch_size === 4 && config.map.chunk_size === 4,
  },
  {
    kind: "linreg",
    fill: async (page) => {
      await field(page, "steps").fill("40");
    },
    check: (config) => config.steps === 40,
  },
];

export async function kindsTests({ test, page, server, url, shot, codeRoot, jobTimeoutMs }) {
  await test("the form submits one job of every kind, lists and key/value rows included, and each succeeds", async () => {
    writeFileSync(join(codeRoot, "e2e_hello.py"), USER_SCRIPT);
    makeActivationsInputs(server.dataDir);
    const items = Array.from({ length: 12 }, (_, n) => JSON.stringify({ n }));
    writeFileSync(join(server.dataDir, "datasets", "e2e-kinds-items.jsonl"), `${items.join("\n")}\n`);
    for (const { kind, fill, check } of KINDS) {
      await page.goto(url(`/new?kind=${kind}`));
      await page.locator(".job-form").waitFor({ timeout: 30000 });
      await fill(page);
      const use = page.getByTestId("use-recommended");
      await waitFor(async () => (await use.textContent())?.startsWith("Use recommended"), {
        timeoutMs: 30000,
        what: `${kind}: a recommendation`,
      });
      await use.click();
      await shot(page, `new-job-${kind}.png`);
      await page.getByTestId("submit").click();
      await page.waitForURL(/\/jobs\/\d+$/, { timeout: 30000 }).catch(async () => {
        const errors = await page.locator('[role="alert"], .field-error, .banner.error').allTextContents();
        throw new Error(`${kind}: the form did not submit: ${errors.join(" | ") || "(no message)"}`);
      });
      const id = Number(page.url().split("/").pop());
      const job = (await server.api(`/api/jobs/${id}`)).body;
      if (job.kind !== kind || !check(job.config))
        throw new Error(`${kind} job ${id} runs ${JSON.stringify(job.config)}, not what the form said`);
      await waitFor(
        async () => {
          const status = await page.getByTestId("job-status").textContent();
          if (status === "failed") throw new Error(`${kind} job ${id} failed: ${(await server.api(`/api/jobs/${id}`)).body.error_summary}`);
          return status === "succeeded";
        },
        { timeoutMs: jobTimeoutMs, what: `${kind} job ${id} to succeed` },
      );
    }
  });
}

export async function runAgainTests({ test, page, server, url, shot, jobTimeoutMs }) {
  await test("run again opens the form at the job's kind, settings, name and devices, and says so", async () => {
    const created = await server.api("/api/jobs", {
      method: "POST",
      body: { kind: "linreg", name: "two-device-run", count: 2, config: { steps: 20, batch_size: 64 } },
    });
    if (created.status !== 201) throw new Error(`linreg job: ${created.status} ${JSON.stringify(created.body)}`);
    const id = created.body.id;
    await page.goto(url(`/jobs/${id}`));
    await waitFor(async () => (await page.getByTestId("job-status").textContent()) === "succeeded", {
      timeoutMs: jobTimeoutMs,
      what: `job ${id} to succeed`,
    });
    const ran = (await server.api(`/api/jobs/${id}`)).body.devices.map((d) => d.index).sort();
    await page.getByTestId("run-again").click();
    await page.waitForURL(new RegExp(`/new\\?kind=linreg&from=${id}$`));
    const note = page.getByTestId("prefilled-note");
    await note.waitFor({ timeout: 15000 });
    if (!(await note.textContent())?.includes(`Prefilled from job #${id} (two-device-run)`))
      throw new Error(`the note says: ${await note.textContent()}`);
    if ((await field(page, "name").inputValue()) !== "two-device-run") throw new Error("the name was not kept");
    if ((await field(page, "steps").inputValue()) !== "20") throw new Error("the steps were not kept");
    await waitFor(async () => (await page.locator('[data-testid="gpu-option"] input:checked').count()) === 2, {
      what: "its 2 devices ticked",
    });
    const ticked = await page.locator('[data-testid="gpu-option"]:has(input:checked)').allTextContents();
    for (const index of ran) {
      if (!ticked.some((t) => t.includes(`GPU ${index} `)))
        throw new Error(`GPU ${index}, which it ran on, is not ticked: ${ticked.join(" | ")}`);
    }
    await shot(page, "new-job-run-again.png");
  });
}
