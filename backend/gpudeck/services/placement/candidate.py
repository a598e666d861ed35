"""A device as the recommender sees it, and why one is left out: plain values shared by the
whole-device rules (`recommend.py`) and the sharing rules (`share_recommend.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Reason = Literal[
    "other_node",
    "held_by_job",
    "external_process",
    "stale_telemetry",
    "insufficient_memory",
    "shared",  # held only by jobs that share it by memory (a whole-device job cannot join)
    "sharing_not_allowed",  # a sharing job may not join: its node's policy
]


@dataclass(frozen=True)
class Candidate:
    node: str
    uuid: str
    index: int
    name: str
    memory_total_bytes: int
    memory_free_bytes: int | None  # NVML's live reading; None before the first sample
    held_by_job_id: int | None = None  # the job holding it whole (a sharing job: shared_by)
    releasing: bool = False  # its holder ended; its node has not confirmed its ranks are gone
    external_process: bool = False
    sample_age_s: float | None = None
    # Sharing by memory (docs/sharing.md), from GET /api/gpus's view of the device:
    shared_by_job_ids: tuple[int, ...] = ()  # the jobs sharing it, by id
    sharing_owners: frozenset[str] = frozenset()  # and their owners
    # Usable memory when idle less the reservations; None where no sharing job may join.
    reservation_room_bytes: int | None = None
    node_shares_memory: bool = False
    node_shares_across_users: bool = False


@dataclass(frozen=True)
class Exclusion:
    node: str
    uuid: str
    index: int
    reason: Reason
    message: str


def excluded(device: Candidate, reason: Reason, message: str) -> Exclusion:
    return Exclusion(device.node, device.uuid, device.index, reason, message)


def key(device: Candidate) -> tuple[str, int, str]:
    """The order devices are listed in: node, then index."""
    return (device.node, device.index, device.uuid)
