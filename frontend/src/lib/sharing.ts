/**
 * Sharing a device by memory (docs/sharing.md), as the board and the new-job form read it from
 * GET /api/gpus and GET /api/nodes: the reservations on a device, what a job would reserve; and,
 * from POST /api/gpus/recommend, whether it could start now by sharing.
 */
import type { Gpu, Recommendation } from "../client/types";
import { formatBytes } from "./format";

export const HUES = 6;

export interface Segment {
  jobId: number;
  name: string;
  owner: string;
  bytes: number;
  releasing: boolean;
  hue: number;
  title: string;
}

/** The stacked bar's parts: each reservation, and the room left (null: none may join). */
export function reservationSegments(gpu: Gpu): { segments: Segment[]; freeBytes: number | null; total: number } {
  const segments = (gpu.reservations ?? []).map((r) => ({
    jobId: r.job_id,
    name: r.job_name,
    owner: r.owner,
    bytes: r.reserved_bytes,
    releasing: r.releasing ?? false,
    // a job keeps its colour on every device it shares
    hue: r.job_id % HUES,
    title: `${r.job_name} #${r.job_id} · ${r.owner} · ${formatBytes(r.reserved_bytes)}`,
  }));
  return { segments, freeBytes: gpu.reservation_room_bytes ?? null, total: Math.max(1, gpu.memory_total_bytes) };
}

export function isShared(gpu: Gpu): boolean {
  return (gpu.reservations ?? []).length > 0;
}

/** A sharing job's reservation on each device: its estimate plus the CUDA context reserve. */
export function reservationBytes(estimateBytes: number | null | undefined, contextReserveBytes: number): number | null {
  return estimateBytes ? estimateBytes + contextReserveBytes : null;
}

/** A device a sharing job could take: where it is, and its room (GET /api/gpus, or the recommender's). */
type ShareDevice = Pick<Gpu, "node" | "index" | "reservation_room_bytes">;

/**
 * Whether the ticked devices can each hold a share of `needBytes` now: one node that allows
 * sharing, and room on every device (the API's reservation room). Nothing to choose here; where a
 * count would go, the recommender says (POST /api/gpus/recommend's `share_devices`).
 */
export function tickedFitAsShare(selected: readonly Gpu[], needBytes: number): boolean {
  const nodes = new Set(selected.map((g) => g.node));
  return (
    selected.length > 0 && nodes.size === 1 && selected.every((g) => g.node_shares_memory && (g.reservation_room_bytes ?? -1) >= needBytes)
  );
}

export interface ShareInput {
  /** every live device (the board's: reservations, room, node policy) */
  devices: readonly Gpu[];
  /** the ticked devices, if any: the job runs on exactly these */
  selected: readonly Gpu[];
  /** the devices asked for when none is ticked */
  count: number;
  /** the nodes a count is spread over, or null */
  spreadNodes: number | null;
  /** the kind's estimate per device; null: none (the kind makes none, or the form is unfinished) */
  estimateBytes: number | null;
  /** GET /api/nodes: what a sharing job reserves beyond its estimate */
  contextReserveBytes: number;
  /**
   * the recommendation for the count (POST /api/gpus/recommend): `enough` false means whole devices
   * would wait; `could_share` and `share_devices` say where it could start now by sharing (the API
   * judges the rooms, the node's policy on other users' jobs, and keeps a share on one node)
   */
  recommendation: Pick<Recommendation, "enough" | "could_share" | "share_devices"> | undefined;
  /** the toggle is on */
  on: boolean;
}

export interface ShareState {
  /** why the toggle cannot be turned on, or null */
  disabledReason: string | null;
  /** what the job would reserve on each device, or null without an estimate */
  reserveBytes: number | null;
  /** the recommender's line about sharing, or null */
  line: string | null;
  /** sharing would start it now (on the devices named in `line`) */
  startsNow: boolean;
}

const TURN_ON = "an admin turns it on with `gpudeck nodes sharing NODE --on`";

/** What the new-job form's "Share the device by memory" toggle offers (docs/sharing.md). */
export function shareState(input: ShareInput): ShareState {
  const reserveBytes = reservationBytes(input.estimateBytes, input.contextReserveBytes);
  const pool = input.selected.length > 0 ? input.selected : input.devices;
  const nodes = [...new Set(pool.map((d) => d.node))];
  const sharingNodes = nodes.filter((n) => pool.some((d) => d.node === n && d.node_shares_memory));
  const disabledReason =
    reserveBytes === null
      ? "no memory estimate for this job: a sharing job reserves its estimate"
      : input.spreadNodes !== null && input.spreadNodes > 1
        ? "a job spread over several nodes cannot share devices"
        : sharingNodes.length === 0
          ? input.selected.length > 0
            ? `the chosen devices' node does not allow sharing (${TURN_ON})`
            : `no node allows sharing devices (${TURN_ON})`
          : null;
  if (disabledReason !== null || reserveBytes === null) return { disabledReason, reserveBytes, line: null, startsNow: false };
  const count = input.selected.length > 0 ? input.selected.length : input.count;
  const onDevices: readonly ShareDevice[] | null =
    input.selected.length > 0
      ? tickedFitAsShare(input.selected, reserveBytes)
        ? input.selected
        : null
      : input.recommendation?.could_share
        ? input.recommendation.share_devices
        : null;
  const where = onDevices?.map((d) => `${d.node}/${d.index} (${formatBytes(d.reservation_room_bytes)} free of reservations)`).join(", ");
  if (input.on) {
    const line = where
      ? `Starts now, sharing ${where}.`
      : `Waits for memory: no ${count > 1 ? `${count} devices have` : "device has"} ${formatBytes(reserveBytes)} free of reservations now.`;
    return { disabledReason, reserveBytes, line, startsNow: onDevices !== null };
  }
  // the whole-device recommendation would wait, sharing would not: say so
  const line = where && input.recommendation?.enough === false ? `Could start now by sharing instead of waiting: ${where}.` : null;
  return { disabledReason, reserveBytes, line, startsNow: false };
}

// The node's watchdog's verdict on a sharing job, as the worker puts it first in the job's
// error (schemas/failure.py): "used 9.3 GiB of its 8.0 GiB reservation on node/2".
const OVER_RESERVATION = /^used .+ of its .+ reservation on \S+$/;

/** The cause when the job was killed for using more than its reservation, else null. */
export function reservationKillCause(errorSummary: string | null | undefined): string | null {
  const first = errorSummary?.split("\n")[0]?.trim() ?? "";
  return OVER_RESERVATION.test(first) ? first : null;
}
