import { Link } from "react-router-dom";
import type { Gpu } from "../../client/types";
import { formatBytes } from "../../lib/format";
import { reservationSegments } from "../../lib/sharing";

/**
 * A device shared by memory: one segment per sharing job (its reservation), then the room a
 * sharing job could still take, then what the safety margin keeps back. Each segment names its
 * job, owner and GiB on hover; the legend below names them in words.
 */
export function ReservationBar({ gpu }: { gpu: Gpu }) {
  const { segments, freeBytes, total } = reservationSegments(gpu);
  return (
    <div className="resbar" data-testid="reservation-bar">
      <div className="resbar-track" role="img" aria-label={`reservations on GPU ${gpu.index}`}>
        {segments.map((s) => (
          <div
            key={s.jobId}
            className={`resbar-segment hue-${s.hue}${s.releasing ? " releasing" : ""}`}
            data-testid="reservation-segment"
            style={{ width: `${(s.bytes / total) * 100}%` }}
            title={s.title}
          />
        ))}
        {freeBytes !== null && freeBytes > 0 && (
          <div
            className="resbar-free"
            data-testid="reservation-free"
            style={{ width: `${(freeBytes / total) * 100}%` }}
            title={`${formatBytes(freeBytes)} free of reservations`}
          />
        )}
      </div>
      <ul className="resbar-legend">
        {segments.map((s) => (
          <li key={s.jobId} data-testid="reservation">
            <span className={`resbar-swatch hue-${s.hue}`} aria-hidden />
            <Link to={`/jobs/${s.jobId}`}>{s.name}</Link>
            <span className="muted">
              {" "}
              #{s.jobId} · {s.owner} · {formatBytes(s.bytes)}
              {s.releasing ? " · releasing" : ""}
            </span>
          </li>
        ))}
        {freeBytes !== null && (
          <li className="muted" data-testid="reservation-room">
            {formatBytes(Math.max(0, freeBytes))} free of reservations
          </li>
        )}
      </ul>
    </div>
  );
}
