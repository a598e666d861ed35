import { Link } from "react-router-dom";
import type { Schemas } from "../client/types";
import { formatBytes } from "../lib/format";

type GpuProcess = Schemas["GpuProcess"];

/**
 * What a row names a process by. A GPUDeck rank's command line is multiprocessing's forkserver,
 * the same for every job and every rank, so a rank is named by its job's kind and its rank (the
 * job is the next column); any other process by its program's name and arguments, without the
 * interpreter's directory that filled the column. The whole command line is the row's hover.
 */
export function processLabel(p: GpuProcess): string {
  const program = p.program ?? p.command ?? "—";
  if (p.job_id == null) return program;
  const kind = p.kind ?? "job";
  return p.rank != null ? `${kind} · rank ${p.rank}` : `${kind} · ${program}`;
}

/**
 * The processes on one device, nvitop style: pid, user, command, memory, and whose it is (a
 * GPUDeck job's rank, or external: a process GPUDeck did not start makes the device busy).
 */
export function ProcessList({ processes }: { processes: readonly GpuProcess[] }) {
  if (processes.length === 0) return null;
  return (
    <table className="process-list small" data-testid="process-list">
      <thead>
        <tr>
          <th>pid</th>
          <th>user</th>
          <th>command</th>
          <th className="num">memory</th>
          <th>job</th>
        </tr>
      </thead>
      <tbody>
        {processes.map((p) => (
          <tr key={p.pid} className={p.managed ? "" : "external"} data-testid="process">
            <td className="mono">{p.pid}</td>
            <td>{p.user ?? "—"}</td>
            <td className="mono command" title={p.command ?? undefined} data-testid="process-command">
              {processLabel(p)}
            </td>
            <td className="num" title={p.host_peak_rss_bytes != null ? `peak RSS ${formatBytes(p.host_peak_rss_bytes)}` : undefined}>
              {formatBytes(p.used_memory_bytes ?? p.host_peak_rss_bytes ?? null)}
              {/* no device figure (a simulated device): the host peak, said to be one */}
              {p.used_memory_bytes == null && p.host_peak_rss_bytes != null && <span className="muted"> RSS</span>}
            </td>
            <td>
              {p.job_id != null ? (
                <Link to={`/jobs/${p.job_id}`}>#{p.job_id}</Link>
              ) : p.managed ? (
                "gpudeck"
              ) : (
                <span className="badge external" title="not started by GPUDeck: the device counts as busy">
                  external · busy
                </span>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
