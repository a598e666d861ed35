"""The recommender's rules for a job that shares devices by memory (docs/sharing.md): pure
functions over candidates, no database, no web.

A sharing job is judged as the scheduler places it (`placement/shared.py`): by its reservation
against the device's reservation room (usable memory when idle less the live reservations, the
trigger's rule), not by live free memory, which neighbours move from sample to sample. It may
join a device whose node allows sharing, that no job holds whole and no outside process uses,
and whose sharing jobs are its owner's unless the node shares across users. It stays on one
node; packed takes the tightest rooms first (best fit, as `packing.best_fit`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby

from gpudeck.services.placement.candidate import Candidate, Exclusion, excluded, key
from gpudeck.services.placement.packing import Room, gib, may_join, short_words


@dataclass(frozen=True)
class ShareAsk:
    """Who asks, and what the job would reserve on each device as a share."""

    owner: str
    need_bytes: int  # packing.share_reservation_bytes: its estimate + the context reserve


def as_room(device: Candidate) -> Room:
    return Room(
        device.node,
        device.uuid,
        device.index,
        device.reservation_room_bytes or 0,
        device.sharing_owners,
        open=device.reservation_room_bytes is not None
        and device.node_shares_memory
        and device.held_by_job_id is None
        and not device.external_process,
    )


def _jobs(device: Candidate) -> str:
    ids = ", ".join(str(i) for i in device.shared_by_job_ids)
    return f"job{'s' if len(device.shared_by_job_ids) > 1 else ''} {ids}"


def share_exclusion(device: Candidate, ask: ShareAsk, node: str | None) -> Exclusion | None:
    """Why a sharing job of `ask` cannot take `device`, or None when it can."""
    if node is not None and device.node != node:
        return excluded(device, "other_node", f"on node {device.node}, not {node}")
    if device.held_by_job_id is not None:
        verb = "releasing from" if device.releasing else "held whole by"
        return excluded(device, "held_by_job", f"{verb} job {device.held_by_job_id}")
    if device.external_process:
        return excluded(device, "external_process", "used by a process GPUDeck did not start")
    if not device.node_shares_memory:
        return excluded(
            device, "sharing_not_allowed", f"node {device.node} does not allow sharing devices"
        )
    room = as_room(device)
    if not room.open:
        return excluded(device, "sharing_not_allowed", "no sharing job may join it now")
    if not may_join(room, ask.owner, device.node_shares_across_users):
        return excluded(
            device,
            "sharing_not_allowed",
            f"shared by {_jobs(device)} of another user; node {device.node} shares a device "
            "between one user's jobs only",
        )
    if room.room_bytes < ask.need_bytes:
        words = short_words(device.node, device.index, room.room_bytes, ask.need_bytes)
        return excluded(device, "insufficient_memory", words)
    return None


def shared_device_exclusion(device: Candidate, ask: ShareAsk | None) -> Exclusion:
    """A device only sharing jobs hold, left out of a whole-device recommendation: whether
    this job could join them as a share ('shared by jobs 3, 4; a sharing job could reserve
    5.1 GiB here')."""
    words = f"shared by {_jobs(device)}"
    why_not = share_exclusion(device, ask, None) if ask is not None else None
    room = device.reservation_room_bytes
    if ask is not None and why_not is None and room is not None:
        words += f"; a sharing job could reserve {gib(room)} here"
    elif ask is not None and why_not is not None and why_not.reason == "insufficient_memory":
        words += (
            f"; {gib(max(0, room or 0))} free of reservations, a share needs {gib(ask.need_bytes)}"
        )
    return excluded(device, "shared", words)


def choose_shared(eligible: Sequence[Candidate], count: int, packed: bool) -> list[Candidate]:
    """`count` devices of one node for a sharing job (a share stays on one node): packed, the
    node and devices with the least room left over (best fit); otherwise the roomiest. With too
    few on every node, the node with the most, all of them."""

    def room(device: Candidate) -> int:
        return device.reservation_room_bytes or 0

    def ordered(group: list[Candidate]) -> list[Candidate]:
        sign = 1 if packed else -1
        return sorted(group, key=lambda d: (sign * room(d), key(d)))

    groups = [ordered(list(g)) for _, g in groupby(sorted(eligible, key=key), key=lambda d: d.node)]
    whole = [g[:count] for g in groups if len(g) >= count]
    if whole:
        sign = 1 if packed else -1
        return min(whole, key=lambda g: (sign * sum(room(d) for d in g), key(g[0])))
    return min(groups, key=lambda g: (-len(g), g[0].node), default=[])


def where(devices: Sequence[Candidate]) -> str:
    """'node-a/1 (3.0 GiB free of reservations), node-a/0 (...)'."""
    return ", ".join(
        f"{d.node}/{d.index} ({gib(d.reservation_room_bytes or 0)} free of reservations)"
        for d in devices
    )
