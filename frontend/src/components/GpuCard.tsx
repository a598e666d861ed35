import { Link } from "react-router-dom";
import type { Gpu } from "../client/types";
import type { Series } from "../hooks/telemetryStore";
import { formatBytes, formatNumber, loadLevel } from "../lib/format";
import { MemoryBar } from "./MemoryBar";
import { ProcessList } from "./ProcessList";
import { SeriesSparkline } from "./SeriesSparkline";
import { SourceBadge } from "./SourceBadge";
import { ReservationBar } from "./sharing/ReservationBar";
import { isShared } from "../lib/sharing";

export function Holder({ gpu }: { gpu: Gpu }) {
  if (isShared(gpu)) {
    const n = gpu.reservations?.length ?? 0;
    return (
      <span className="holder shared" data-testid="holder">
        shared by {n} job{n > 1 ? "s" : ""}
      </span>
    );
  }
  if (gpu.held_by?.releasing) {
    // The job ended, but this node has not yet confirmed its processes are gone.
    return (
      <span
        className="holder releasing"
        data-testid="holder"
        title="the job has ended; the device frees once its node confirms the job's processes are gone"
      >
        releasing from <Link to={`/jobs/${gpu.held_by.job_id}`}>#{gpu.held_by.job_id}</Link>
      </span>
    );
  }
  if (gpu.held_by) {
    return (
      <span className="holder held" data-testid="holder">
        <Link to={`/jobs/${gpu.held_by.job_id}`}>{gpu.held_by.job_name}</Link>
        <span className="muted">
          {" "}
          #{gpu.held_by.job_id} · {gpu.held_by.owner}
        </span>
      </span>
    );
  }
  if (gpu.external_processes.length > 0) {
    const used = gpu.external_processes.reduce((sum, p) => sum + (p.used_memory_bytes ?? 0), 0);
    const pids = gpu.external_processes.map((p) => p.pid).join(", ");
    return (
      <span className="holder external" data-testid="holder" title={`pid ${pids}`}>
        external process{gpu.external_processes.length > 1 ? "es" : ""} · {formatBytes(used)}
      </span>
    );
  }
  return (
    <span className="holder idle muted" data-testid="holder">
      idle
    </span>
  );
}

interface Props {
  gpu: Gpu;
  series: Series | undefined;
  revision: number;
  stale?: boolean;
}

export function GpuCard({ gpu, series, revision, stale = false }: Props) {
  const util = gpu.utilization_gpu_pct ?? null;
  const power = gpu.power_watts ?? null;
  const powerFraction = power !== null && gpu.power_limit_watts ? power / gpu.power_limit_watts : 0;
  return (
    <article
      className={`card gpu-card ${stale || gpu.stale ? "stale" : ""} ${gpu.lost ? "lost" : ""}`}
      data-testid="gpu-card"
      data-uuid={gpu.uuid}
    >
      <header className="gpu-card-head">
        <div className="gpu-title">
          <span className="gpu-index">GPU {gpu.index}</span>
          <span className="gpu-name" title={gpu.uuid}>
            {gpu.name}
          </span>
        </div>
        {gpu.node_shares_memory && (
          <span className="badge shareable" data-testid="shareable" title="its node lets jobs share its devices by memory">
            shareable
          </span>
        )}
        <SourceBadge source={gpu.source} />
      </header>
      {gpu.lost && <div className="banner error small">NVML reports this GPU as lost</div>}
      <MemoryBar
        usedBytes={gpu.memory_used_bytes ?? null}
        totalBytes={gpu.memory_total_bytes}
        // a simulated device's "used" is its job's CUDA estimate; its ranks' memory below is host RSS
        what={gpu.source === "simulated" ? "CUDA estimate of its job" : undefined}
      />
      <dl className="gpu-stats">
        <div>
          <dt>util</dt>
          <dd data-testid="util" className={util !== null ? `level-text-${loadLevel(util / 100)}` : ""}>
            {formatNumber(util, 0, "%")}
          </dd>
        </div>
        <div>
          <dt>temp</dt>
          <dd data-testid="temp">{formatNumber(gpu.temperature_c, 0, "°C")}</dd>
        </div>
        <div>
          <dt>power</dt>
          <dd data-testid="power" className={`level-text-${loadLevel(powerFraction)}`}>
            {formatNumber(power, 0, " W")}
            {gpu.power_limit_watts ? <span className="muted"> / {formatNumber(gpu.power_limit_watts, 0)}</span> : null}
          </dd>
        </div>
        <div>
          <dt>SM clock</dt>
          <dd>{formatNumber(gpu.sm_clock_mhz, 0, " MHz")}</dd>
        </div>
      </dl>
      {isShared(gpu) && <ReservationBar gpu={gpu} />}
      <div className="gpu-holder">
        <Holder gpu={gpu} />
      </div>
      <SeriesSparkline series={series} revision={revision} />
      <ProcessList processes={gpu.processes ?? []} />
    </article>
  );
}
