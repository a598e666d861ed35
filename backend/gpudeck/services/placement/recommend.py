"""Which devices to give a job: pure functions over live readings, no database, no web.

Free memory is NVML's (it counts what every process holds, GPUDeck's or not) less a safety
margin, because the estimate cannot see allocator fragmentation or a neighbour's growth.
A device is left out, with a reason, when a GPUDeck job holds it, another process uses it,
its reading is stale or missing, it is on another node than asked, or it has too little room;
a device that sharing jobs hold is `shared`, saying whether this job could join them as a share.
A job that asks to share (`share="memory"`) is judged by share_recommend.py's rules instead, and
every recommendation says whether the job could start now by sharing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import groupby
from typing import Literal

from gpudeck.services.placement.candidate import Candidate, Exclusion, Reason, excluded, key
from gpudeck.services.placement.packing import share_reservation_bytes
from gpudeck.services.placement.share_recommend import (
    ShareAsk,
    choose_shared,
    share_exclusion,
    shared_device_exclusion,
    where,
)

MiB = 1024**2
Strategy = Literal["packed", "spread", "memory"]
DEFAULT_STALE_AFTER_S = 10.0


@dataclass(frozen=True)
class Recommendation:
    devices: tuple[Candidate, ...]  # in the order ranks should take them
    excluded: tuple[Exclusion, ...]
    enough: bool
    message: str
    # What the job would reserve on each device as a share, and whether it could start now
    # by sharing (on `share_devices`, said in `share_message`): see share_recommend.py.
    share_bytes_per_device: int = 0
    could_share: bool = False
    share_devices: tuple[Candidate, ...] = ()
    share_message: str | None = None


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


def exclusion(
    device: Candidate,
    *,
    bytes_per_device: int,
    node: str | None,
    safety_margin_bytes: int | None,
    stale_after_s: float,
    share_ask: ShareAsk | None = None,
) -> Exclusion | None:
    """Why `device` cannot take a rank, or None when it can. A device sharing jobs hold is
    `shared`, saying whether the job could join them as a share of `share_ask`."""

    def out(reason: Reason, message: str) -> Exclusion:
        return excluded(device, reason, message)

    if node is not None and device.node != node:
        return out("other_node", f"on node {device.node}, not {node}")
    if device.shared_by_job_ids:
        return shared_device_exclusion(device, share_ask)
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
    share: Literal["memory"] | None = None,
    owner: str = "",
    context_reserve_bytes: int = 0,
) -> Recommendation:
    """Choose `count` devices that each have `bytes_per_device` usable, by `strategy`; with
    `share`, devices whose reservation room holds the job as a share of `owner`'s (the
    estimate plus `context_reserve_bytes`). Either way, say whether it could start now by
    sharing."""
    if count < 1:
        raise ValueError("count must be at least 1")
    devices = sorted(candidates, key=key)
    ask = ShareAsk(owner, share_reservation_bytes(bytes_per_device, context_reserve_bytes))
    sharable = [d for d in devices if share_exclusion(d, ask, node) is None]
    share_devices = choose_shared(sharable, count, packed=strategy == "packed")
    could_share = len(share_devices) == count
    if share == "memory":
        left_out = [why for d in devices if (why := share_exclusion(d, ask, node)) is not None]
        chosen, fitting = share_devices, len(share_devices)
    else:
        judge = partial(
            exclusion,
            bytes_per_device=bytes_per_device,
            node=node,
            safety_margin_bytes=safety_margin_bytes,
            stale_after_s=stale_after_s,
            share_ask=ask,
        )
        judged = [(d, judge(d)) for d in devices]
        left_out = [why for _, why in judged if why is not None]
        eligible = [d for d, why in judged if why is None]
        chosen = _ORDER[strategy](eligible, count, safety_margin_bytes)[:count]
        fitting = len(eligible)
    enough = len(chosen) == count
    return Recommendation(
        tuple(chosen),
        tuple(left_out),
        enough,
        _message(count, strategy, fitting, enough, share),
        share_bytes_per_device=ask.need_bytes,
        could_share=could_share,
        share_devices=tuple(share_devices) if could_share else (),
        share_message=_share_message(share_devices, enough, share) if could_share else None,
    )


def _message(count: int, strategy: Strategy, fitting: int, enough: bool, share: str | None) -> str:
    if enough:
        return f"{count} device(s) fit{' as a share' if share else ''}, {strategy}"
    if share:
        return f"not enough devices: {fitting} of the {count} needed fit as a share on one node"
    return f"not enough devices: {fitting} of the {count} needed fit"


def _share_message(devices: Sequence[Candidate], enough: bool, share: str | None) -> str:
    waits = share is None and not enough  # whole devices would wait; a share would not
    return f"could start now by sharing{' instead of waiting' if waits else ''}: {where(devices)}"


def _by_memory(devices: Sequence[Candidate], count: int, margin: int | None) -> list[Candidate]:
    """Most usable memory first."""
    return sorted(devices, key=lambda d: (-usable_bytes(d, margin), key(d)))


def _spread(devices: Sequence[Candidate], count: int, margin: int | None) -> list[Candidate]:
    """One device per node in turn (nodes by name), each node's roomiest first."""
    per_node = [_by_memory(list(group), count, margin) for _, group in _grouped(devices)]
    depth = max((len(group) for group in per_node), default=0)
    return [group[i] for i in range(depth) for group in per_node if i < len(group)]


def _packed(devices: Sequence[Candidate], count: int, margin: int | None) -> list[Candidate]:
    """The fewest nodes, and within them the tightest fits: large devices stay whole."""

    def best_fit(group: Sequence[Candidate]) -> list[Candidate]:
        return sorted(group, key=lambda d: (usable_bytes(d, margin), key(d)))

    nodes = [best_fit(list(group)) for _, group in _grouped(devices)]
    # Nodes that can take the whole job alone: the one whose tightest `count` wastes least.
    whole = [group for group in nodes if len(group) >= count]
    if whole:
        return min(whole, key=lambda g: (_room(g[:count], margin), key(g[0])))[:count]
    # Otherwise the fullest nodes first: the fewest nodes that add up to `count`.
    nodes.sort(key=lambda g: (-len(g), key(g[0])))
    return [device for group in nodes for device in group]


def _room(devices: Sequence[Candidate], margin: int | None) -> int:
    return sum(usable_bytes(d, margin) for d in devices)


def _grouped(devices: Sequence[Candidate]) -> Iterable[tuple[str, Iterable[Candidate]]]:
    return groupby(sorted(devices, key=key), key=lambda d: d.node)


_ORDER = {"packed": _packed, "spread": _spread, "memory": _by_memory}
