import type { TelemetryStore } from "../hooks/telemetryStore";
import { formatBytes, formatNumber } from "../lib/format";
import { MemoryBar } from "./MemoryBar";
import { SeriesSparkline } from "./SeriesSparkline";

/** All devices as one: total memory, mean utilization, hottest device, total power. */
export function AggregateView({ store, revision }: { store: TelemetryStore; revision: number }) {
  const agg = store.aggregate();
  return (
    <section className="card aggregate" data-testid="aggregate">
      <header className="gpu-card-head">
        <div className="gpu-title">
          <span className="gpu-index">{agg.devices} devices</span>
          <span className="gpu-name">
            {store.nodes().length} node{store.nodes().length === 1 ? "" : "s"} · {agg.busy} in use
          </span>
        </div>
      </header>
      <MemoryBar usedBytes={agg.memoryUsedBytes} totalBytes={agg.memoryTotalBytes} />
      <dl className="gpu-stats">
        <div>
          <dt>mean util</dt>
          <dd data-testid="agg-util">{formatNumber(agg.meanUtilPct, 0, "%")}</dd>
        </div>
        <div>
          <dt>hottest</dt>
          <dd>{formatNumber(agg.maxTempC, 0, "°C")}</dd>
        </div>
        <div>
          <dt>power</dt>
          <dd>{formatNumber(agg.powerWatts, 0, " W")}</dd>
        </div>
        <div>
          <dt>free</dt>
          <dd>{formatBytes(agg.memoryTotalBytes - agg.memoryUsedBytes)}</dd>
        </div>
      </dl>
      <SeriesSparkline series={store.aggregateSeries()} revision={revision} height={120} />
    </section>
  );
}
