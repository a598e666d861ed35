// Shared by the browser tests and the heap measurement: a real `gpudeck run` on simulated
// devices, and Debian's Chromium driven by playwright-core (no browser download).
import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const frontendDir = join(dirname(fileURLToPath(import.meta.url)), "..");
export const repoDir = join(frontendDir, "..");
export const CHROMIUM = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";
const GPUDECK = process.env.GPUDECK_BIN ?? join(repoDir, ".venv/bin/gpudeck");
/** The interpreter beside `gpudeck` (or E2E_PYTHON): the one the server's ranks run under. */
export const PYTHON = process.env.E2E_PYTHON ?? join(dirname(GPUDECK), "python");

/**
 * The example third-party kind (examples/kinds/gpudeck-kind-linreg) installed with pip into a
 * fresh directory, as a user would install a kind, entry point and all; put `dir` on the
 * server's PYTHONPATH to offer it. Built from a copy: setuptools writes into its source tree.
 */
export function installExampleKind() {
  const dir = mkdtempSync(join(tmpdir(), "gpudeck-e2e-kind-"));
  const source = join(dir, "src");
  const site = join(dir, "site");
  cpSync(join(repoDir, "examples/kinds/gpudeck-kind-linreg"), source, { recursive: true });
  const python = PYTHON;
  const pip = ["-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "--no-build-isolation"];
  execFileSync(python, [...pip, "--target", site, source], { stdio: ["ignore", "ignore", "inherit"] });
  return { dir: site, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** PYTHONPATH with `dir` in front of what this process has. */
export function pythonPathWith(dir) {
  return [dir, process.env.PYTHONPATH].filter(Boolean).join(":");
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A port nobody listens on now, at or above 18000 unless E2E_PORT says otherwise. */
export async function freePort() {
  if (process.env.E2E_PORT) return Number(process.env.E2E_PORT);
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const port = 18000 + Math.floor(Math.random() * 2000);
    const ok = await new Promise((resolve) => {
      const probe = createServer();
      probe.once("error", () => resolve(false));
      probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
    });
    if (ok) return port;
  }
  throw new Error("no free port found");
}

export async function waitFor(check, { timeoutMs = 30000, intervalMs = 250, what = "condition" } = {}) {
  const deadline = Date.now() + timeoutMs;
  let lastError;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      lastError = error;
    }
    await sleep(intervalMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${lastError.message}` : ""}`);
}

/**
 * Starts `gpudeck run` in its own process group with a fresh data directory (and so fresh
 * embedded Postgres and Redis, unless E2E_DATABASE_URL / E2E_REDIS_URL name others); resolves
 * once /api/health answers, with the first admin's token that `gpudeck run` prints (null when
 * authentication is off). `stop()` ends that group (and only it) and removes the directory.
 */
export async function startServer({ devices = "4x80GiB", env = {} } = {}) {
  if (!existsSync(join(frontendDir, "dist/index.html"))) {
    throw new Error("frontend/dist is missing: run `npm run build` first");
  }
  if (!existsSync(GPUDECK)) throw new Error(`${GPUDECK} not found (set GPUDECK_BIN)`);
  const dataDir = mkdtempSync(join(tmpdir(), "gpudeck-e2e-"));
  const port = await freePort();
  const logPath = join(dataDir, "server.log");
  const log = openSync(logPath, "a");
  const inherited = { ...process.env };
  delete inherited.GPUDECK_DATABASE_URL;
  delete inherited.GPUDECK_REDIS_URL;
  const child = spawn(GPUDECK, ["run"], {
    cwd: repoDir,
    detached: true,
    stdio: ["ignore", log, log],
    env: {
      ...inherited,
      ...(process.env.E2E_DATABASE_URL ? { GPUDECK_DATABASE_URL: process.env.E2E_DATABASE_URL } : {}),
      ...(process.env.E2E_REDIS_URL ? { GPUDECK_REDIS_URL: process.env.E2E_REDIS_URL } : {}),
      GPUDECK_DATA_DIR: dataDir,
      GPUDECK_PORT: String(port),
      GPUDECK_HOST: "127.0.0.1",
      GPUDECK_DEVICE_PROVIDER: "simulated",
      GPUDECK_SIMULATED_DEVICES: devices,
      ...env,
    },
  });
  let exited = null;
  child.on("exit", (code, signal) => (exited = { code, signal }));
  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (exited === null) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        /* already gone */
      }
      await waitFor(() => exited !== null, { timeoutMs: 20000, what: "the server to stop" }).catch(() => {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          /* already gone */
        }
      });
    }
    if (!process.env.E2E_KEEP_DATA) rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      async () => {
        if (exited !== null) throw new Error(`gpudeck run exited early (${JSON.stringify(exited)}); see ${logPath}`);
        const response = await fetch(`${baseUrl}/api/health`);
        return response.ok;
      },
      { timeoutMs: Number(process.env.E2E_START_TIMEOUT_MS ?? 120000), intervalMs: 500, what: "/api/health" },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  const token = await firstAdminToken(baseUrl, logPath);
  return { baseUrl, port, dataDir, logPath, stop, token, api: (path, init) => apiCall(baseUrl, token, path, init) };
}

/** The token in the sign-in link `gpudeck run` prints, or null when the API needs none. */
async function firstAdminToken(baseUrl, logPath) {
  const open = await fetch(`${baseUrl}/api/auth/me`);
  if (open.ok) return null;
  return waitFor(() => readFileSync(logPath, "utf8").match(/#token=([A-Za-z0-9_-]+)/)?.[1], {
    timeoutMs: 15000,
    what: "the sign-in link in the server's output",
  });
}

async function apiCall(baseUrl, token, path, init = {}) {
  const response = await fetch(`${baseUrl}${path}`, {
    ...init,
    headers: {
      "Content-Type": "application/json",
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
      ...(init.headers ?? {}),
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

/** Debian's Chromium, headless, in a new empty profile. */
export async function launchBrowser() {
  const profile = mkdtempSync(join(tmpdir(), "gpudeck-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1440, height: 900 },
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
  const close = async () => {
    await context.close().catch(() => {});
    rmSync(profile, { recursive: true, force: true });
  };
  return { context, close };
}
