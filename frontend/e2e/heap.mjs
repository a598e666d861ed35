// Does the board keep up with 16 simulated devices at 1 Hz without its JS heap growing?
// Opens the dashboard in Chromium against `gpudeck run` (GPUDECK_SIMULATED_DEVICES=16x80GiB),
// then every interval forces a GC (CDP HeapProfiler.collectGarbage) and reads the used heap
// (CDP Performance.getMetrics JSHeapUsedSize).
//   node e2e/heap.mjs [duration_s=600] [interval_s=30] [warmup_s=60]
// Prints start/end/max heap after GC, and the trend after warm-up (least squares, KiB/min); exits
// non-zero when the end exceeds the post-warm-up baseline by more than max(2 MiB, 10 %), or
// samples stopped arriving.
import { launchBrowser, sleep, startServer, waitFor } from "./lib.mjs";

const durationS = Number(process.argv[2] ?? process.env.HEAP_DURATION_S ?? 600);
const intervalS = Number(process.argv[3] ?? process.env.HEAP_INTERVAL_S ?? 30);
const warmupS = Number(process.argv[4] ?? process.env.HEAP_WARMUP_S ?? 60);
const MiB = 1024 * 1024;
const mib = (bytes) => `${(bytes / MiB).toFixed(2)} MiB`;

/** Least-squares slope of used heap over time, in bytes per second. */
function slope(samples) {
  const n = samples.length;
  if (n < 2) return 0;
  const mt = samples.reduce((s, p) => s + p.t, 0) / n;
  const mu = samples.reduce((s, p) => s + p.used, 0) / n;
  const num = samples.reduce((s, p) => s + (p.t - mt) * (p.used - mu), 0);
  const den = samples.reduce((s, p) => s + (p.t - mt) ** 2, 0);
  return den > 0 ? num / den : 0;
}

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
    const points = (await page.$$eval('[data-testid="sparkline"] .chart-host', (els) => els.map((e) => Number(e.dataset.points)))).reduce(
      (a, b) => a + b,
      0,
    );
    const samples = [];
    const started = Date.now();
    console.log(`heap: 16 devices at 1 Hz for ${durationS} s, measuring every ${intervalS} s`);
    for (;;) {
      const elapsed = (Date.now() - started) / 1000;
      const heap = await heapAfterGc(cdp);
      samples.push({ t: elapsed, ...heap });
      console.log(
        `  t=${elapsed.toFixed(0).padStart(4)} s  used ${mib(heap.used)}  total ${mib(heap.total)}  DOM nodes ${heap.nodes}  listeners ${heap.listeners}`,
      );
      if (elapsed >= durationS) break;
      await sleep(Math.min(intervalS, durationS - elapsed) * 1000);
    }
    const pointsEnd = (
      await page.$$eval('[data-testid="sparkline"] .chart-host', (els) => els.map((e) => Number(e.dataset.points)))
    ).reduce((a, b) => a + b, 0);
    const first = samples[0];
    const last = samples[samples.length - 1];
    const settled = samples.filter((s) => s.t >= Math.min(warmupS, durationS / 2));
    const baseline = settled[0] ?? first;
    const max = Math.max(...samples.map((s) => s.used));
    const growth = last.used - baseline.used;
    const allowed = Math.max(2 * MiB, 0.1 * baseline.used);
    const trend = (slope(settled) * 60) / 1024;
    const live = pointsEnd > points;
    console.log(
      `heap: start ${mib(first.used)}, after ${baseline.t.toFixed(0)} s warm-up ${mib(baseline.used)}, end ${mib(last.used)}, max ${mib(max)}`,
    );
    console.log(`heap: growth after warm-up ${mib(growth)} (allowed ${mib(allowed)}), trend ${trend.toFixed(1)} KiB/min`);
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
