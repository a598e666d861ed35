/**
 * Sharing a device by memory (docs/sharing.md), as the board and the new-job form read it from
 * GET /api/gpus and GET /api/nodes: the reservations on a device, what a job would reserve, and
 * whether it could start now by sharing.
 */
import type { Gpu } from "../client/types";
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

/**
 * Whether a sharing job reserving `needBytes` on each of `count` devices could start now: on
 * the eligible nodes (allowing sharing), devices whose room holds it, already shared or idle.
 * Mirrors the API's best fit (services/placement/packing.py); the API decides.
 */
export function devicesToShareNow(gpus: readonly Gpu[], needBytes: number, count: number, nodes?: readonly string[]): Gpu[] | null {
  const fitting = gpus.filter(
    (g) =>
      g.node_shares_memory &&
      (nodes === undefined || nodes.includes(g.node)) &&
      g.reservation_room_bytes !== null &&
      g.reservation_room_bytes !== undefined &&
      g.reservation_room_bytes >= needBytes,
  );
  const byNode = new Map<string, Gpu[]>();
  for (const g of fitting) byNode.set(g.node, [...(byNode.get(g.node) ?? []), g]);
  for (const members of byNode.values()) {
    // a sharing job stays on one node: the tightest devices that hold it first
    if (members.length >= count) {
      return [...members].sort((a, b) => (a.reservation_room_bytes ?? 0) - (b.reservation_room_bytes ?? 0)).slice(0, count);
    }
  }
  return null;
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
  /** the whole-device recommendation for the count: `enough` false means it would wait */
  wholeDevicesNow: boolean | undefined;
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
  const onDevices = devicesToShareNow(pool, reserveBytes, count, sharingNodes);
  const where = onDevices?.map((d) => `${d.node}/${d.index} (${formatBytes(d.reservation_room_bytes)} free of reservations)`).join(", ");
  if (input.on) {
    const line = where
      ? `Starts now, sharing ${where}.`
      : `Waits for memory: no ${count > 1 ? `${count} devices have` : "device has"} ${formatBytes(reserveBytes)} free of reservations now.`;
    return { disabledReason, reserveBytes, line, startsNow: onDevices !== null };
  }
  // the whole-device recommendation would wait, sharing would not: say so
  const line = where && input.wholeDevicesNow === false ? `Could start now by sharing instead of waiting: ${where}.` : null;
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
