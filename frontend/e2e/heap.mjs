// Does the board keep up with 16 simulated devices at 1 Hz without its JS heap growing?
// Opens the dashboard in Chromium against `gpudeck run` (GPUDECK_SIMULATED_DEVICES=16x80GiB),
// then every interval forces a GC (CDP HeapProfiler.collectGarbage) and reads the used heap
// (CDP Performance.getMetrics JSHeapUsedSize).
//   node e2e/heap.mjs [duration_s=600] [interval_s=30]
// Prints start/end/max heap after GC and exits non-zero when the end exceeds the start by more
// than max(2 MiB, 10 %) or samples stopped arriving.
import { launchBrowser, sleep, startServer, waitFor } from "./lib.mjs";

const durationS = Number(process.argv[2] ?? process.env.HEAP_DURATION_S ?? 600);
const intervalS = Number(process.argv[3] ?? process.env.HEAP_INTERVAL_S ?? 30);
const MiB = 1024 * 1024;
const mib = (bytes) => `${(bytes / MiB).toFixed(2)} MiB`;

async function heapAfterGc(cdp) {
  await cdp.send("HeapProfiler.collectGarbage");
  await cdp.send("HeapProfiler.collectGarbage");
  const { metrics } = await cdp.send("Performance.getMetrics");
  const get = (name) => metrics.find((m) => m.name === name)?.value ?? NaN;
  return { used: get("JSHeapUsedSize"), total: get("JSHeapTotalSize"), nodes: get("Nodes"), listeners: get("JSEventListeners") };
}

async function main() {
  const server = await startServer({ devices: "16x80GiB", env: { GPUDECK_SAMPLE_INTERVAL_S: "1" } });
  const browser = await launchBrowser();
  try {
    const page = await browser.context.newPage();
    await page.goto(server.token ? `${server.baseUrl}/#token=${server.token}` : `${server.baseUrl}/`);
    await waitFor(async () => (await page.getByTestId("gpu-card").count()) === 16, { timeoutMs: 60000, what: "16 GPU cards" });
    const cdp = await browser.context.newCDPSession(page);
    await cdp.send("Performance.enable");
    await cdp.send("HeapProfiler.enable");
    await sleep(5000); // let the first renders settle
    const points = (await page.$$eval('[data-testid="sparkline"] .chart-host', (els) => els.map((e) => Number(e.dataset.points)))).reduce((a, b) => a + b, 0);
    const samples = [];
    const started = Date.now();
    console.log(`heap: 16 devices at 1 Hz for ${durationS} s, measuring every ${intervalS} s`);
    for (;;) {
      const elapsed = (Date.now() - started) / 1000;
      const heap = await heapAfterGc(cdp);
      samples.push({ t: elapsed, ...heap });
      console.log(`  t=${elapsed.toFixed(0).padStart(4)} s  used ${mib(heap.used)}  total ${mib(heap.total)}  DOM nodes ${heap.nodes}  listeners ${heap.listeners}`);
      if (elapsed >= durationS) break;
      await sleep(Math.min(intervalS, durationS - elapsed) * 1000);
    }
    const pointsEnd = (await page.$$eval('[data-testid="sparkline"] .chart-host', (els) => els.map((e) => Number(e.dataset.points)))).reduce((a, b) => a + b, 0);
    const first = samples[0];
    const last = samples[samples.length - 1];
    const max = Math.max(...samples.map((s) => s.used));
    const growth = last.used - first.used;
    const allowed = Math.max(2 * MiB, 0.1 * first.used);
    const live = pointsEnd > points;
    console.log(`heap: start ${mib(first.used)}, end ${mib(last.used)}, max ${mib(max)}, growth ${mib(growth)} (allowed ${mib(allowed)})`);
    console.log(`heap: chart points across the board ${points} -> ${pointsEnd} (${live ? "still updating" : "NOT updating"})`);
    const ok = growth <= allowed && live;
    console.log(`heap: ${ok ? "ok" : "FAILED"}`);
    process.exitCode = ok ? 0 : 1;
  } finally {
    await browser.close();
    await server.stop();
  }
}

main().catch((error) => {
  console.error(`heap: ${error.stack ?? error}`);
  process.exit(1);
});
