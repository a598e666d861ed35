import type { UseQueryResult } from "@tanstack/react-query";
import type { GpuType, GpuTypes } from "../../client/clusterTypes";
import { formatBytes } from "../../lib/format";

interface Props {
  /** GET /api/clusters/{name}/gpu-types for the chosen partition and the estimate */
  types: UseQueryResult<GpuTypes>;
}

/** ✓, ✗, or why the type cannot be judged. */
function Fits({ type }: { type: GpuType }) {
  if (type.fits === true)
    return (
      <span className="ok" aria-label="fits">
        ✓
      </span>
    );
  if (type.fits === false)
    return (
      <span className="bad" aria-label="does not fit">
        ✗
      </span>
    );
  const why = type.memory_bytes === null ? "its memory is not configured" : "no estimate yet";
  return (
    <span className="muted" title={why} aria-label={why}>
      —
    </span>
  );
}

/** Why a submit asks for any type, when it does. */
function anyBecause(shown: GpuTypes): string {
  if (!shown.reachable) return "Slurm did not answer, so the types present are unknown";
  if (shown.estimate_bytes === null) return "no estimate yet";
  if (!shown.types.some((t) => t.memory_bytes !== null)) return "no type's memory is configured (an admin sets it)";
  return "every type fits";
}

/** What a submit of this estimate asks Slurm for, or that it is refused and why. */
function Request({ shown }: { shown: GpuTypes }) {
  if (shown.refusal !== null) {
    return (
      <p className="banner error small" role="alert" data-testid="gpu-type-refused">
        No GPU type of partition {shown.partition} fits this job: a submit will be refused. {shown.refusal}
      </p>
    );
  }
  return (
    <p className="small" data-testid="gpu-type-request">
      GPUDeck will request: {shown.gpu_type !== null ? <strong>{shown.gpu_type}</strong> : <strong>any type</strong>}
      {shown.gpu_type === null ? (
        <span className="muted"> · {anyBecause(shown)}</span>
      ) : (
        <span className="muted"> · the smallest that fits</span>
      )}
    </p>
  );
}

/**
 * The partition's GPU (GRES) types, each with its memory, what a job can use of it, how many the
 * partition has, and whether the job's memory estimate fits; then the type GPUDeck asks Slurm
 * for, by the submit's own rule (the API applies it: the form never guesses).
 */
export function GpuTypeTable({ types }: Props) {
  if (types.isPending) return <p className="muted small">Reading the partition&apos;s GPU types…</p>;
  if (types.error) return <p className="banner warn small">GPU types could not be read: {types.error.message}</p>;
  const shown = types.data;
  const estimated = shown.estimate_bytes !== null;
  return (
    <div data-testid="gpu-types" aria-busy={types.isPlaceholderData || undefined}>
      {!shown.reachable && (
        <p className="banner warn small" data-testid="gpu-types-unreachable">
          Slurm did not answer ({shown.cause}): the configured types are shown, their counts unknown.
        </p>
      )}
      {shown.types.length === 0 ? (
        <p className="muted small">Slurm reports no GPUs in partition {shown.partition}.</p>
      ) : (
        <table className="breakdown-table" aria-label={`GPU types of partition ${shown.partition}`}>
          <thead>
            <tr>
              <th>type</th>
              <th className="num">memory</th>
              <th className="num">usable</th>
              <th className="num">GPUs</th>
              <th>fits {estimated ? formatBytes(shown.estimate_bytes) : ""}</th>
            </tr>
          </thead>
          <tbody>
            {shown.types.map((t) => (
              <tr key={t.type ?? ""} data-testid="gpu-type">
                <td>{t.type ?? <span className="muted">untyped</span>}</td>
                <td className="num">{formatBytes(t.memory_bytes)}</td>
                <td className="num">{formatBytes(t.usable_bytes)}</td>
                <td className="num">{t.count ?? "?"}</td>
                <td>
                  <Fits type={t} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Request shown={shown} />
    </div>
  );
}
