import type { Job } from "../../client/types";
import { formatBytes } from "../../lib/format";

type Memory = NonNullable<Job["rank_memory"]>;

/** Every rank either figure names: host peaks (script jobs) and device peaks (NVML). */
function rankRows(memory: Memory) {
  const host = new Map((memory.ranks ?? []).map((r) => [r.rank, r.host_peak_rss_bytes]));
  const device = new Map(Object.entries(memory.device_peak_bytes ?? {}).map(([r, b]) => [Number(r), b]));
  const ranks = [...new Set([...host.keys(), ...device.keys()])].sort((a, b) => a - b);
  return { ranks, host, device };
}

/**
 * What a job really used, next to what it declared: each rank's peak host memory against the
 * job's host memory limit (script jobs), each rank's peak device memory (NVML, on GPUs), and
 * the server's advice for the next submission ("peak 3.1 GiB of 8 GiB declared per rank:
 * 4 GiB would do").
 */
export function RankMemory({ memory, advice }: { memory: Job["rank_memory"]; advice: string[] }) {
  const rows = memory ? rankRows(memory) : null;
  if (!rows?.ranks.length && advice.length === 0) return null;
  return (
    <div className="rank-memory" data-testid="rank-memory">
      {memory && rows && rows.ranks.length > 0 && (
        <table className="small">
          <thead>
            <tr>
              <th>rank</th>
              {rows.host.size > 0 && <th title="peak resident host memory (VmHWM)">host peak</th>}
              {rows.device.size > 0 && <th title="peak device memory of its process (NVML)">device peak</th>}
            </tr>
          </thead>
          <tbody>
            {rows.ranks.map((rank) => (
              <tr key={rank}>
                <td className="mono">{rank}</td>
                {rows.host.size > 0 && (
                  <td className="mono" data-testid={`rank-peak-${rank}`}>
                    {formatBytes(rows.host.get(rank))}
                  </td>
                )}
                {rows.device.size > 0 && (
                  <td className="mono" data-testid={`rank-device-peak-${rank}`}>
                    {formatBytes(rows.device.get(rank))}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
          {memory.host_limit_bytes != null && (
            <tfoot>
              <tr>
                <td className="muted">limit</td>
                <td className="mono" data-testid="host-limit">
                  {formatBytes(memory.host_limit_bytes)} {memory.exceeded ? "(exceeded)" : "(all ranks)"}
                </td>
              </tr>
            </tfoot>
          )}
        </table>
      )}
      {advice.map((line) => (
        <p key={line} className="note muted small" data-testid="advice">
          {line}
        </p>
      ))}
    </div>
  );
}
