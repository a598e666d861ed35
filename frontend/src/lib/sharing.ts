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
