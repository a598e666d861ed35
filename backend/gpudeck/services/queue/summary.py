"""Where a job stands the moment it is submitted, without a pass of its own.

A pass over 10,000 waiting jobs is too dear for every submit (200 clients submit at once), so
the scheduler leaves a small summary of its last pass in Redis: how many waiting jobs there
are of each priority and owner's usage (the order's keys, counted), each user's fair-share
usage, and when each device is next free once the jobs ahead are placed. The submit answer
reads the new job's position, reason and expected start from it: one Redis GET, and one read of
the devices held now (a job placed since the pass holds devices the summary has free: the
answer names it, as the full pass would). Waiting jobs submitted since the pass are counted
ahead by one read (submitted_since), though not placed; a backfill chance is not seen;
GET /api/jobs/{id} runs the full pass.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

import redis
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, Job
from gpudeck.schemas.jobs import QueueInfo, node_counts
from gpudeck.services.placement.live_memory import Readings
from gpudeck.services.placement.packing import short_words
from gpudeck.services.queue import passes
from gpudeck.services.queue import waiting as queue_waiting
from gpudeck.services.queue.plan import Plan, Policy

SUMMARY_KEY = "gpudeck:queue:summary"
MAX_AGE_S = 10.0  # older: the scheduler is gone or stuck; the caller runs a pass instead


@dataclass(frozen=True)
class Summary:
    written_at: float  # wall clock, to tell a stale summary
    usage: dict[str, float]  # owner -> recent device-seconds (fair share)
    ahead: list[tuple[int, float, int]]  # (priority, its owner's usage, waiting jobs)
    free_at: dict[str, dict[str, float | None]]  # node -> uuid -> next free (None: never)
    # node -> uuid -> [index, reservation room in bytes], for devices open to sharing jobs
    room: dict[str, dict[str, list[int]]] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(self.__dict__)

    @classmethod
    def from_json(cls, raw: str | bytes) -> Summary:
        data = json.loads(raw)
        data["ahead"] = [tuple(a) for a in data["ahead"]]
        return cls(**data)


def compute(
    session: Session,
    live: Readings | None,
    *,
    half_life_s: float,
    policy: Policy | None = None,
    explain: bool = True,
    cache: queue_waiting.WaitingCache | None = None,
) -> tuple[Plan, Summary]:
    """The scheduler's pass (passes.run_pass) and the summary of what it leaves waiting
    (meaningful only when `explain`: a deciding-only pass reserves nothing ahead). `cache`:
    the scheduler's waiting jobs from its last pass (queue_waiting.WaitingCache)."""
    result = passes.run_pass(
        session, live, half_life_s=half_life_s, policy=policy, explain=explain, cache=cache
    )
    out, usage = result.plan, result.usage
    counts = Counter(
        (j.priority, usage.get(j.owner, 0.0)) for j in result.waiting if j.id in out.infos
    )
    free_at: dict[str, dict[str, float | None]] = {}
    for (node, uuid), when in out.free_at.items():
        free_at.setdefault(node, {})[uuid] = None if math.isinf(when) else when
    ahead = [(p, u, n) for (p, u), n in sorted(counts.items())]
    room: dict[str, dict[str, list[int]]] = {}
    for (node, uuid), (index, nbytes) in out.room.items():
        room.setdefault(node, {})[uuid] = [index, nbytes]
    return out, Summary(time.time(), usage, ahead, free_at, room)


def publish(r: redis.Redis, summary: Summary) -> None:
    r.set(SUMMARY_KEY, summary.to_json(), ex=int(MAX_AGE_S * 6))


def read(r: redis.Redis) -> Summary | None:
    """The last pass's summary; None when there is none fresh enough (or Redis is down)."""
    try:
        raw = r.get(SUMMARY_KEY)
    except redis.RedisError:
        return None
    if raw is None:
        return None
    summary = Summary.from_json(raw)
    return summary if time.time() - summary.written_at <= MAX_AGE_S else None


@dataclass(frozen=True)
class HeldNow:
    """A device held at the submit, by a job the summary's pass may not have seen."""

    job_id: int
    index: int
    limit_at: float  # its holder's start (or submission) plus its time limit


def held_now(session: Session, nodes: list[str]) -> dict[tuple[str, str], HeldNow]:
    """The devices held now on `nodes`, read in the submit's own transaction: the summary is up
    to a few seconds old, and a job placed since must not be answered "starts now"."""
    rows = session.execute(
        select(
            Allocation.node,
            Allocation.gpu_uuid,
            Allocation.job_id,
            Allocation.gpu_index,
            func.extract("epoch", func.coalesce(Job.started_at, Job.created_at)) + Job.time_limit_s,
        )
        .join(Job, Job.id == Allocation.job_id)
        .where(Allocation.released_at.is_(None), Allocation.node.in_(nodes))
    )
    return {(n, u): HeldNow(j, i, float(t)) for n, u, j, i, t in rows}


def submitted_since(session: Session, summary: Summary, job: Job) -> int:
    """The waiting jobs submitted since the summary's pass, before `job` and of its priority or
    above: ahead of it, though the pass never saw them (without them, two jobs held one after
    the other were both answered "position 1")."""
    since = datetime.fromtimestamp(summary.written_at, UTC)
    query = select(func.count()).where(
        queue_waiting.is_waiting(),
        Job.created_at > since,
        Job.id < job.id,
        Job.priority >= job.priority,
    )
    return int(session.scalar(query) or 0)


def place_of(
    summary: Summary,
    job: Job,
    held: dict[tuple[str, str], HeldNow] | None = None,
    since: int = 0,
) -> QueueInfo:
    """A new waiting job's position, reason and expected start as of the summary's pass, with
    the devices `held` now (held_now) that the pass saw free and the `since` jobs submitted
    since the pass ahead of it (submitted_since)."""
    held = held or {}
    mine = summary.usage.get(job.owner, 0.0)
    ahead = since + sum(
        n for p, u, n in summary.ahead if p > job.priority or (p == job.priority and u <= mine)
    )
    if job.held:
        return QueueInfo(
            position=ahead + 1,
            reason_code="held",
            reason="held: release it to let it start",
            expected_start_at=None,
        )
    if job.depends_on:
        names = ", ".join(str(d) for d in job.depends_on)
        return QueueInfo(
            position=ahead + 1,
            reason_code="dependency",
            reason=f"waiting for job {names} to succeed",
            expected_start_at=None,
        )
    taken = _taken_since(summary, held)
    when, need, free_now, where = _soonest(summary, job, taken)
    named = _named_taken(job, taken)
    short = _memory_short(summary, job) if job.reserved_bytes_per_device else None
    if short is not None:
        code, reason = "insufficient_memory", short
    elif named:
        names = ", ".join(f"{node}/{h.index} held by job {h.job_id}" for node, h in named)
        code, reason = "devices_busy", f"devices busy: {names}"
    elif when <= summary.written_at:
        code, reason = "priority", f"priority: {ahead} jobs ahead of it in the queue"
    else:
        code, reason = (
            "devices_busy",
            f"devices busy: needs {need} on {where}, {free_now} free after the jobs ahead",
        )
    return QueueInfo(
        position=ahead + 1,
        reason_code=code,
        reason=reason,
        expected_start_at=None if math.isinf(when) else datetime.fromtimestamp(when, UTC),
        expected_start_from_time_limits=bool(taken),
    )


def _memory_short(summary: Summary, job: Job) -> str | None:
    """A sharing job that no device open to it had room for at the pass: the memory short on
    the roomiest ones; None when some had room (it waits for its turn, not for memory)."""
    need = int(job.reserved_bytes_per_device or 0)
    if job.requested_devices is not None:
        nodes = job.requested_nodes or [job.node] * len(job.requested_devices)
        wanted = set(zip(nodes, job.requested_devices, strict=True))
    elif node_counts(job.world_size, job.spread_nodes, job.devices_per_node) is None:
        wanted = {(job.node, u) for u in summary.room.get(job.node, {})}
    else:
        wanted = {(n, u) for n, rooms in summary.room.items() for u in rooms}
    rooms: list[tuple[str, int, int]] = [
        (node, summary.room[node][uuid][0], summary.room[node][uuid][1])
        for node, uuid in wanted
        if uuid in summary.room.get(node, {})
    ]
    if sum(1 for _, _, r in rooms if r >= need) >= job.world_size:
        return None
    roomiest = sorted(rooms, key=lambda x: (-x[2], x[0], x[1]))[:3]
    if not roomiest:
        return "devices busy: no device it may use is open to sharing now"
    return "insufficient memory: " + "; ".join(
        short_words(node, index, r, need) for node, index, r in roomiest
    )


def _taken_since(
    summary: Summary, held: dict[tuple[str, str], HeldNow]
) -> dict[tuple[str, str], HeldNow]:
    """The devices held now that the summary's pass had free: placed since it ran."""
    taken = {}
    for (node, uuid), holder in held.items():
        free_at = summary.free_at.get(node, {}).get(uuid, math.inf)
        if free_at is not None and free_at <= summary.written_at:
            taken[(node, uuid)] = holder
    return taken


def _named_taken(job: Job, taken: dict[tuple[str, str], HeldNow]) -> list[tuple[str, HeldNow]]:
    if job.requested_devices is None:
        return []
    nodes = job.requested_nodes or [job.node] * len(job.requested_devices)
    pairs = zip(nodes, job.requested_devices, strict=True)
    return [(n, taken[(n, u)]) for n, u in pairs if (n, u) in taken]


def _soonest(
    summary: Summary, job: Job, taken: dict[tuple[str, str], HeldNow]
) -> tuple[float, str, int, str]:
    """(when its devices are next free, what it needs, how many of the devices it may use are
    free at the pass, where) from the summary: named devices on any nodes, a count on its
    node, or a count spread over nodes (the soonest of the node counts it allows). A device
    `taken` since the pass is free at its holder's time limit."""

    def at(node: str, uuid: str) -> float:
        if (node, uuid) in taken:
            return taken[(node, uuid)].limit_at
        t = summary.free_at.get(node, {}).get(uuid)
        return math.inf if t is None else t

    def free(times: list[float]) -> int:
        return sum(1 for t in times if t <= summary.written_at)

    if job.requested_devices is not None:
        nodes = job.requested_nodes or [job.node] * len(job.requested_devices)
        times = [at(n, u) for n, u in zip(nodes, job.requested_devices, strict=True)]
        return max(times), str(len(times)), free(times), ", ".join(dict.fromkeys(nodes))
    counts = node_counts(job.world_size, job.spread_nodes, job.devices_per_node)
    if counts is None:
        known = sorted(at(job.node, u) for u in summary.free_at.get(job.node, {}))
        when = known[job.world_size - 1] if job.world_size <= len(known) else math.inf
        return when, str(job.world_size), free(known), job.node
    by_node = {n: sorted(at(n, u) for u in uuids) for n, uuids in summary.free_at.items()}
    best = math.inf
    for m in counts:
        per = job.world_size // m
        ready = sorted(times[per - 1] for times in by_node.values() if len(times) >= per)
        if len(ready) >= m:
            best = min(best, ready[m - 1])
    shapes = " or ".join(f"{m} x {job.world_size // m}" for m in counts) + " (nodes x devices)"
    everywhere = [t for times in by_node.values() for t in times]
    return best, shapes, free(everywhere), "the nodes"
