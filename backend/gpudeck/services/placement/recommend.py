"""Which devices to give a job: pure functions over live readings, no database, no web.

Free memory is NVML's (it counts what every process holds, GPUDeck's or not) less a safety
margin, because the estimate cannot see allocator fragmentation or a neighbour's growth.
A device is left out, with a reason, when a GPUDeck job holds it, another process uses it,
its reading is stale or missing, it is on another node than asked, or it has too little room.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Literal

MiB = 1024**2
Strategy = Literal["packed", "spread", "memory"]
Reason = Literal[
    "other_node", "held_by_job", "external_process", "stale_telemetry", "insufficient_memory"
]
DEFAULT_STALE_AFTER_S = 10.0


@dataclass(frozen=True)
class Candidate:
    node: str
    uuid: str
    index: int
    name: str
    memory_total_bytes: int
    memory_free_bytes: int | None  # NVML's live reading; None before the first sample
    held_by_job_id: int | None = None
    releasing: bool = False  # its holder ended; its node has not confirmed its ranks are gone
    external_process: bool = False
    sample_age_s: float | None = None


@dataclass(frozen=True)
class Exclusion:
    node: str
    uuid: str
    index: int
    reason: Reason
    message: str


@dataclass(frozen=True)
class Recommendation:
    devices: tuple[Candidate, ...]  # in the order ranks should take them
    excluded: tuple[Exclusion, ...]
    enough: bool
    message: str


def default_safety_margin(memory_total_bytes: int) -> int:
    """512 MiB or 5 % of the device, whichever is larger."""
    return max(512 * MiB, memory_total_bytes // 20)


def usable_of(free_bytes: int, total_bytes: int) -> int:
    """The one usable-memory rule: a device's free memory less the safety margin of its size.
    Every check of an estimate against a device reads it (recommendations, a submit's live
    check, the pass, what can never fit)."""
    return free_bytes - default_safety_margin(total_bytes)


def usable_when_idle(total_bytes: int) -> int:
    """What a device of this size can give a job with nothing else on it."""
    return usable_of(total_bytes, total_bytes)


def usable_bytes(device: Candidate, safety_margin_bytes: int | None = None) -> int:
    """A recommendation's rule: the request may set its own margin."""
    if safety_margin_bytes is None:
        return usable_of(device.memory_free_bytes or 0, device.memory_total_bytes)
    return (device.memory_free_bytes or 0) - safety_margin_bytes


def _key(device: Candidate) -> tuple[str, int, str]:
    return (device.node, device.index, device.uuid)


def exclusion(
    device: Candidate,
    *,
    bytes_per_device: int,
    node: str | None,
    safety_margin_bytes: int | None,
    stale_after_s: float,
) -> Exclusion | None:
    """Why `device` cannot take a rank, or None when it can."""

    def out(reason: Reason, message: str) -> Exclusion:
        return Exclusion(device.node, device.uuid, device.index, reason, message)

    if node is not None and device.node != node:
        return out("other_node", f"on node {device.node}, not {node}")
    if device.held_by_job_id is not None:
        verb = "releasing from" if device.releasing else "held by"
        return out("held_by_job", f"{verb} job {device.held_by_job_id}")
    if device.external_process:
        return out("external_process", "used by a process GPUDeck did not start")
    age = device.sample_age_s
    if device.memory_free_bytes is None or age is None or age > stale_after_s:
        seen = "no reading yet" if age is None else f"last reading {age:.0f} s old"
        return out("stale_telemetry", f"{seen} (limit {stale_after_s:.0f} s)")
    usable = usable_bytes(device, safety_margin_bytes)
    if usable < bytes_per_device:
        margin = (device.memory_free_bytes or 0) - usable
        return out(
            "insufficient_memory",
            f"{_mib(device.memory_free_bytes)} free - {_mib(margin)} margin = {_mib(usable)}"
            f" usable < {_mib(bytes_per_device)} needed",
        )
    return None


def _mib(nbytes: int | None) -> str:
    return f"{(nbytes or 0) / MiB:,.0f} MiB"


def recommend(
    candidates: Iterable[Candidate],
    *,
    bytes_per_device: int,
    count: int,
    strategy: Strategy = "packed",
    node: str | None = None,
    safety_margin_bytes: int | None = None,
    stale_after_s: float = DEFAULT_STALE_AFTER_S,
) -> Recommendation:
    """Choose `count` devices that each have `bytes_per_device` usable, by `strategy`."""
    if count < 1:
        raise ValueError("count must be at least 1")
    eligible: list[Candidate] = []
    excluded: list[Exclusion] = []
    for device in sorted(candidates, key=_key):
        why = exclusion(
            device,
            bytes_per_device=bytes_per_device,
            node=node,
            safety_margin_bytes=safety_margin_bytes,
            stale_after_s=stale_after_s,
        )
        if why is None:
            eligible.append(device)
        else:
            excluded.append(why)
    chosen = _ORDER[strategy](eligible, count, safety_margin_bytes)[:count]
    enough = len(chosen) == count
    message = (
        f"{count} device(s) fit, {strategy}"
        if enough
        else f"not enough devices: {len(eligible)} of the {count} needed fit"
    )
    return Recommendation(tuple(chosen), tuple(excluded), enough, message)


def _by_memory(devices: Sequence[Candidate], count: int, margin: int | None) -> list[Candidate]:
    """Most usable memory first."""
    return sorted(devices, key=lambda d: (-usable_bytes(d, margin), _key(d)))


def _spread(devices: Sequence[Candidate], count: int, margin: int | None) -> list[Candidate]:
    """One device per node in turn (nodes by name), each node's roomiest first."""
    per_node = [_by_memory(list(group), count, margin) for _, group in _grouped(devices)]
    depth = max((len(group) for group in per_node), default=0)
    return [group[i] for i in range(depth) for group in per_node if i < len(group)]


def _packed(devices: Sequence[Candidate], count: int, margin: int | None) -> list[Candidate]:
    """The fewest nodes, and within them the tightest fits: large devices stay whole."""

    def best_fit(group: Sequence[Candidate]) -> list[Candidate]:
        return sorted(group, key=lambda d: (usable_bytes(d, margin), _key(d)))

    nodes = [best_fit(list(group)) for _, group in _grouped(devices)]
    # Nodes that can take the whole job alone: the one whose tightest `count` wastes least.
    whole = [group for group in nodes if len(group) >= count]
    if whole:
        return min(whole, key=lambda g: (_room(g[:count], margin), _key(g[0])))[:count]
    # Otherwise the fullest nodes first: the fewest nodes that add up to `count`.
    nodes.sort(key=lambda g: (-len(g), _key(g[0])))
    return [device for group in nodes for device in group]


def _room(devices: Sequence[Candidate], margin: int | None) -> int:
    return sum(usable_bytes(d, margin) for d in devices)


def _grouped(devices: Sequence[Candidate]) -> Iterable[tuple[str, Iterable[Candidate]]]:
    return groupby(sorted(devices, key=_key), key=lambda d: d.node)


_ORDER = {"packed": _packed, "spread": _spread, "memory": _by_memory}
