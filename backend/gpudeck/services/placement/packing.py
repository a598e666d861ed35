"""Packing jobs that share devices by memory: pure functions over each device's reservation room.

A device's room is its usable memory when idle (the one safety-margin rule) less the bytes that
live shared allocations reserve on it. A sharing job goes where its reservation fits, best fit
first: the device with the least room that still holds it, so the fewest devices are touched and
roomy devices stay whole for the next job. Postgres still decides every race (the trigger of
migration 0021): this only chooses.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

GiB = 1024**3


@dataclass(frozen=True)
class Room:
    """One device as a sharing job sees it."""

    node: str
    uuid: str
    index: int
    room_bytes: int  # usable when idle, less the live shared reservations on it
    owners: frozenset[str] = frozenset()  # the owners of the sharing jobs on it
    open: bool = True  # no exclusive holder, no outside process, its node allows sharing


def share_reservation_bytes(estimate_bytes: int, context_reserve_bytes: int) -> int:
    """What a sharing job reserves on each device: its estimate plus the CUDA context reserve
    (settings.cuda_context_reserve_bytes). Submit stores it; the recommender asks with it."""
    return estimate_bytes + context_reserve_bytes


def may_join(room: Room, owner: str, across_users: bool) -> bool:
    """Whether a job of `owner` may share the device with the jobs already on it."""
    return room.open and (across_users or room.owners <= {owner})


def best_fit(
    rooms: Iterable[Room], need_bytes: int, count: int, owner: str, across_users: bool
) -> list[Room] | None:
    """`count` devices that each hold `need_bytes`, the tightest first; None: too few."""
    fitting = [r for r in rooms if may_join(r, owner, across_users) and r.room_bytes >= need_bytes]
    if len(fitting) < count:
        return None
    fitting.sort(key=lambda r: (r.room_bytes, r.node, r.index))
    return sorted(fitting[:count], key=lambda r: (r.node, r.index))


def gib(nbytes: int) -> str:
    return f"{nbytes / GiB:.1f} GiB"


def short_words(node: str, index: int, room_bytes: int, need_bytes: int) -> str:
    """'device vm/2: 3.1 GiB free of reservations, needs 4.2 GiB'."""
    return (
        f"device {node}/{index}: {gib(max(0, room_bytes))} free of reservations, "
        f"needs {gib(need_bytes)}"
    )


def short_reason(rooms: Sequence[Room], need_bytes: int, owner: str, across_users: bool) -> str:
    """Why a sharing job does not fit: the open devices with the most room, each with the
    memory it is short of (up to 3 named)."""
    open_rooms = [r for r in rooms if may_join(r, owner, across_users)]
    roomiest = sorted(open_rooms, key=lambda r: (-r.room_bytes, r.node, r.index))[:3]
    if not roomiest:
        return "no device may be shared: each is held whole, used by another process, or "\
            "shared by another user's job"  # fmt: skip
    return "insufficient memory: " + "; ".join(
        short_words(r.node, r.index, r.room_bytes, need_bytes) for r in roomiest
    )
