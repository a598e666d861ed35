"""One scheduling pass, as a pure function: the cluster and the queue in, decisions out.

No database, no clock, no I/O: `services.queue` reads the state and applies the decisions, the
trace replay in bench/scheduler.py drives the same function with a simulated clock, and the
property tests call it directly. The rules (docs/scheduler.md):

- Order: priority (higher first), then fair share (less recent usage first), then age.
- Gang placement: all of a job's devices at once or none. Explicit devices wait for exactly
  those; a count takes any free devices of its node whose free memory holds its estimate.
  A device with a process GPUDeck did not start is busy.
- EASY backfill: the first job that cannot start gets a reservation (the earliest time its
  devices are free, from the time limits of the jobs holding them); a job further down starts
  now only if it cannot delay that reservation (it ends before it, or uses other devices).
- Quotas: a user's jobs never hold more than `max_devices` devices at once.
- Dependencies: a job waits until all it depends on succeeded; if one failed, was cancelled,
  lost or timed out, the job is cancelled with that reason.
- Preemption: a job that cannot start now may stop running `preemptible` jobs of lower
  priority on its node (whole jobs, fewest first) when their devices let it start; it then
  waits for them to stop with a final checkpoint (they are queued again, to resume).
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Literal

Key = tuple[str, str]  # (node, uuid)
ReasonCode = Literal[
    "devices_busy", "priority", "quota", "dependency", "held", "insufficient_memory", "preempting"
]
FAILED_DEPENDENCY = frozenset({"failed", "cancelled", "lost", "timeout"})
NEVER = math.inf
_NO_DEPS = ("ok", "")
_EMPTY: frozenset[Key] = frozenset()


@dataclass(frozen=True)
class Dev:
    node: str
    uuid: str
    index: int
    holder: int | None = None  # the job holding it (a live allocation)
    external: bool = False  # a process GPUDeck did not start runs on it
    usable_bytes: int | None = None  # free memory less the safety margin; None: no reading
    key: Key = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Computed once: a pass over 10,000 jobs looks it up millions of times.
        object.__setattr__(self, "key", (self.node, self.uuid))


@dataclass(frozen=True)
class Holding:
    """A job that holds devices (starting, running, or placed and about to start)."""

    id: int
    owner: str
    devices: tuple[Key, ...]
    ends_at: float  # its start plus its time limit: it holds nothing after
    priority: int = 0
    preemptible: bool = False  # running and marked preemptible: may be stopped for a higher one
    stopping: bool = False  # its preemption was already asked for: it frees its devices soon


@dataclass(frozen=True)
class Waiting:
    id: int
    owner: str
    node: str
    world_size: int
    submitted_at: float
    time_limit_s: float
    priority: int = 0
    requested: tuple[str, ...] | None = None  # explicit uuids on `node`; None: a count
    bytes_per_device: int | None = None
    held: bool = False
    # The status of each job it depends on (id -> status).
    dependencies: Mapping[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Quota:
    max_devices: int | None = None
    max_queued_jobs: int | None = None


@dataclass(frozen=True)
class Policy:
    order: Literal["fifo", "fair"] = "fair"  # fifo: age only; fair: priority, fair share, age
    backfill: bool = True


@dataclass(frozen=True)
class Start:
    job_id: int
    devices: tuple[Dev, ...]  # in rank order


@dataclass(frozen=True)
class Info:
    position: int
    reason_code: ReasonCode
    reason: str
    expected_start: float | None  # same clock as `now`; None: unknown


@dataclass
class Plan:
    starts: list[Start] = field(default_factory=list)
    cancels: list[tuple[int, str]] = field(default_factory=list)
    # (running job to stop and queue again, the waiting job it makes room for)
    preempts: list[tuple[int, int]] = field(default_factory=list)
    infos: dict[int, Info] = field(default_factory=dict)
    # When each device is next free once every waiting job is placed as estimated (NEVER:
    # not expected): what a job submitted after this pass would find (services.queue_summary).
    free_at: dict[Key, float] = field(default_factory=dict)


def dependency_state(dependencies: Mapping[int, str]) -> tuple[str, str]:
    """("ok" | "wait" | "failed", reason): after-success semantics."""
    for dep_id, status in sorted(dependencies.items()):
        if status in FAILED_DEPENDENCY:
            return "failed", f"dependency job {dep_id} ended {status}"
    waiting = [str(d) for d, s in sorted(dependencies.items()) if s != "succeeded"]
    if waiting:
        return "wait", f"waiting for job {', '.join(waiting)} to succeed"
    return "ok", ""


def order_key(job: Waiting, usage: Mapping[str, float], policy: Policy) -> tuple[float, ...]:
    if policy.order == "fifo":
        return (job.submitted_at, job.id)
    return (-job.priority, usage.get(job.owner, 0.0), job.submitted_at, job.id)


def _fits(dev: Dev, need: int | None) -> bool:
    return need is None or dev.usable_bytes is None or dev.usable_bytes >= need


class _State:
    """The devices as the pass sees them: who holds what now, and when each frees up."""

    def __init__(self, devices: Sequence[Dev], holding: Sequence[Holding], now: float) -> None:
        self.now = now
        self.devs = {d.key: d for d in devices}
        self.by_node: dict[str, list[Dev]] = {}
        for d in sorted(devices, key=lambda d: (d.node, d.index)):
            self.by_node.setdefault(d.node, []).append(d)
        ends = {k: h.ends_at for h in holding for k in h.devices}
        self.holder: dict[Key, int | None] = {d.key: d.holder for d in devices}
        # When each device is (expected to be) free: now, a holder's end, or never.
        self.avail: dict[Key, float] = {}
        self.free: set[Key] = set()
        self.free_count = Counter[str]()
        for d in devices:
            if d.external:
                self.avail[d.key] = NEVER
            elif d.holder is not None:
                self.avail[d.key] = max(now, ends.get(d.key, NEVER))
            else:
                self.avail[d.key] = now
                self.free.add(d.key)
                self.free_count[d.node] += 1
        # Per node, (avail, index, key) sorted: the soonest devices of a count job are its head.
        self.profile = {
            node: sorted((self.avail[d.key], d.index, d.key) for d in devs)
            for node, devs in self.by_node.items()
        }
        self.holdings = {h.id: h for h in holding}
        # Preemption is looked for only by jobs above the lowest preemptible priority: in a
        # queue with no preemptible job running, it costs one comparison per job.
        self.preemptible_floor = min(
            (h.priority for h in holding if h.preemptible), default=math.inf
        )
        self.claimed: set[int] = set()  # holdings whose devices a job of this pass took
        self.used = Counter[str]()
        for h in holding:
            self.used[h.owner] += len(h.devices)
        # Busy reasons depend only on which devices are free: cached until a job starts.
        self.reasons: dict[tuple[str, tuple[str, ...] | None, int, int | None], str] = {}

    def take(self, job_id: int, devs: Sequence[Dev], until: float) -> None:
        for d in devs:
            self.free.discard(d.key)
            self.free_count[d.node] -= 1
            self.holder[d.key] = job_id
            self.set_avail(d, until)
        self.reasons.clear()

    def set_avail(self, dev: Dev, when: float) -> None:
        row = self.profile[dev.node]
        row.remove((self.avail[dev.key], dev.index, dev.key))
        self.avail[dev.key] = when
        bisect.insort(row, (when, dev.index, dev.key))

    def candidates(self, job: Waiting) -> list[Dev] | None:
        """The devices the job may use at all; None when it names one that does not exist."""
        if job.requested is None:
            return self.by_node.get(job.node, [])
        found = [self.devs.get((job.node, u)) for u in job.requested]
        return None if any(d is None for d in found) else [d for d in found if d is not None]

    def earliest(self, job: Waiting, devs: list[Dev]) -> tuple[float, list[Key]]:
        """When the job could start at the soonest, on which devices (from time limits)."""
        if job.requested is not None:
            keys = [d.key for d in devs]
            return max((self.avail[k] for k in keys), default=NEVER), keys
        if len(devs) < job.world_size:
            return NEVER, []
        soonest = self.profile[job.node][: job.world_size]
        return soonest[-1][0], [k for _, _, k in soonest]

    def busy_reason(self, job: Waiting, devs: list[Dev]) -> str:
        cache_key = (job.node, job.requested, job.world_size, job.bytes_per_device)
        reason = self.reasons.get(cache_key)
        if reason is None:
            reason = self.reasons[cache_key] = self._busy_reason(job, devs)
        return reason

    def _busy_reason(self, job: Waiting, devs: list[Dev]) -> str:
        held = [d for d in devs if d.key not in self.free]
        names = ", ".join(
            f"{d.node}/{d.index} "
            + ("used by another process" if d.external else f"held by job {self.holder[d.key]}")
            for d in held[:4]
        )
        more = f" and {len(held) - 4} more" if len(held) > 4 else ""
        if job.requested is not None:
            return f"devices busy: {names}{more}"
        free = sum(1 for d in devs if d.key in self.free and _fits(d, job.bytes_per_device))
        return f"devices busy: needs {job.world_size} on {job.node}, {free} free" + (
            f" ({names}{more})" if names else ""
        )


def _choose_now(
    state: _State, job: Waiting, devs: list[Dev], shadow: Set[Key]
) -> tuple[list[Dev], str | None]:
    """Devices to start on now (prefer ones outside the reservation), or a reason it cannot."""
    if job.requested is None and state.free_count[job.node] < job.world_size:
        return [], state.busy_reason(job, devs)  # the common case in a long queue: no lists
    free = [d for d in devs if d.key in state.free]
    fitting = [d for d in free if _fits(d, job.bytes_per_device)]
    if job.requested is not None:
        if len(free) < len(devs):
            return [], state.busy_reason(job, devs)
        if len(fitting) < len(devs):
            return [], "insufficient memory: " + ", ".join(
                f"{d.node}/{d.index} has {(d.usable_bytes or 0) / 1024**3:.2f} GiB usable"
                for d in free
                if d not in fitting
            )
        return devs, None
    if len(fitting) < job.world_size:
        if len(free) >= job.world_size:
            return [], (
                f"insufficient memory: {len(fitting)} of {len(free)} free devices on "
                f"{job.node} hold its estimate, it needs {job.world_size}"
            )
        return [], state.busy_reason(job, devs)
    fitting.sort(key=lambda d: (d.key in shadow, d.index))
    return fitting[: job.world_size], None


def _may_backfill(
    policy: Policy, shadow: tuple[int, float, set[Key]], ends: float, chosen: list[Dev]
) -> bool:
    """EASY: it cannot delay the reservation if it ends first or leaves its devices alone."""
    if not policy.backfill:
        return False
    return ends <= shadow[1] or not ({d.key for d in chosen} & shadow[2])


def _quota_delays(
    state: _State, quotas: Mapping[str, Quota], job: Waiting, first: Waiting | None
) -> bool:
    """Backfilling a job of the reserved job's owner must leave that owner's quota room for
    the reserved job, or the reservation would slip behind the quota."""
    if first is None or first.owner != job.owner:
        return False
    quota = quotas.get(job.owner)
    limit = quota.max_devices if quota else None
    return limit is not None and state.used[job.owner] + job.world_size + first.world_size > limit


def _victims(state: _State, job: Waiting, devs: list[Dev], protected: Set[Key]) -> list[Holding]:
    """The running preemptible jobs of lower priority whose devices let `job` start (jobs
    already being stopped first, then the lowest priority, then the largest: fewest victims);
    empty when no such set exists. A device in another job's reservation is never taken."""
    keys = {d.key for d in devs}

    def victim_of(d: Dev) -> Holding | None:
        holder = state.holder[d.key]
        h = state.holdings.get(holder) if holder is not None else None
        if h is None or d.external or d.key in protected or h.priority >= job.priority:
            return None
        # Its devices still its own in this pass: no earlier job claimed them.
        return h if h.preemptible and h.id not in state.claimed else None

    busy = [d for d in devs if d.key not in state.free]
    if job.requested is not None:
        found = {d.key: victim_of(d) for d in busy}
        if not busy or any(h is None for h in found.values()):
            return []
        return list({h.id: h for h in found.values() if h is not None}.values())
    count = sum(
        1
        for d in devs
        if d.key in state.free and d.key not in protected and _fits(d, job.bytes_per_device)
    )
    candidates = {h.id: h for d in busy if (h := victim_of(d)) is not None}
    chosen: list[Holding] = []
    for h in sorted(
        candidates.values(), key=lambda h: (not h.stopping, h.priority, -len(h.devices))
    ):
        if count >= job.world_size:
            break
        chosen.append(h)
        count += sum(1 for k in h.devices if k in keys)
    return chosen if count >= job.world_size else []


def _claim(
    state: _State, job: Waiting, victims: list[Holding], devs: list[Dev], until: float
) -> None:
    """The devices `job` will start on once its victims stop: taken for the rest of the pass."""
    theirs = {k for h in victims for k in h.devices}
    free = [d for d in devs if d.key in state.free and _fits(d, job.bytes_per_device)]
    mine = [d for d in devs if d.key in theirs]
    if job.requested is None:
        free = free[: max(0, job.world_size - len(mine))]
    state.take(job.id, free, until)
    state.claimed.update(h.id for h in victims)
    for d in mine:
        state.holder[d.key] = job.id
        state.set_avail(d, until)
    state.used[job.owner] += job.world_size


def plan(
    devices: Sequence[Dev],
    holding: Sequence[Holding],
    waiting: Iterable[Waiting],
    *,
    now: float,
    usage: Mapping[str, float] | None = None,
    quotas: Mapping[str, Quota] | None = None,
    policy: Policy | None = None,
    explain: bool = True,
) -> Plan:
    """Decide which waiting jobs start now, which are cancelled, and why the others wait.

    `explain=False` (the scheduler's latency-critical passes) decides the same starts,
    cancels and preemptions but skips what only explains: past the first blocked job (the
    reservation backfill protects), a job that cannot start gets no expected start, and the
    devices are not reserved ahead for it (only `infos` and `free_at` differ)."""
    usage = usage or {}
    quotas = quotas or {}
    policy = policy or Policy()
    state = _State(devices, holding, now)
    out = Plan()
    # The first job that cannot start: its reservation (when, which devices) is protected.
    shadow: tuple[int, float, set[Key]] | None = None
    first_blocked: Waiting | None = None  # the job holding that reservation
    position = 0
    for job in sorted(waiting, key=lambda j: order_key(j, usage, policy)):
        deps, dep_reason = dependency_state(job.dependencies) if job.dependencies else _NO_DEPS
        if deps == "failed":
            out.cancels.append((job.id, dep_reason))
            continue
        position += 1
        if job.held:
            out.infos[job.id] = Info(position, "held", "held: release it to let it start", None)
            continue
        if deps == "wait":
            out.infos[job.id] = Info(position, "dependency", dep_reason, None)
            continue
        devs = state.candidates(job)
        if devs is None:  # a named device left the inventory: it waits for its return
            out.infos[job.id] = Info(position, "devices_busy", "devices busy: gone", None)
            continue
        quota = quotas.get(job.owner)
        limit = quota.max_devices if quota else None
        if limit is not None and state.used[job.owner] + job.world_size > limit:
            reason = (
                f"quota: {job.owner} may hold {limit} devices at once, "
                f"holds {state.used[job.owner]}, this job needs {job.world_size}"
            )
            out.infos[job.id] = Info(position, "quota", reason, None)
            continue
        if (
            not explain
            and shadow is not None
            and job.requested is None
            and state.free_count[job.node] < job.world_size
            and job.priority <= state.preemptible_floor
        ):
            continue  # cannot start, preempts nobody: the rest would only explain why
        chosen, why = _choose_now(state, job, devs, shadow[2] if shadow else _EMPTY)
        code: ReasonCode = "devices_busy"
        if why is not None and why.startswith("insufficient memory"):
            code = "insufficient_memory"
        if chosen:
            ends = now + job.time_limit_s
            if shadow is None or (
                _may_backfill(policy, shadow, ends, chosen)
                and not _quota_delays(state, quotas, job, first_blocked)
            ):
                state.take(job.id, chosen, ends)
                state.used[job.owner] += len(chosen)
                out.starts.append(Start(job.id, tuple(chosen)))
                position -= 1
                continue
            assert shadow is not None
            code, why = "priority", f"priority: its devices are reserved for job {shadow[0]}"
        protected = shadow[2] if shadow is not None else _EMPTY
        victims: list[Holding] = []
        if code == "devices_busy" and job.priority > state.preemptible_floor:
            victims = _victims(state, job, devs, protected)
        if victims:
            _claim(state, job, victims, devs, now + job.time_limit_s)
            out.preempts.extend((h.id, job.id) for h in victims if not h.stopping)
            names = ", ".join(f"job {h.id}" for h in victims)
            reason = f"preempting {names} (preemptible, lower priority): starts once stopped"
            out.infos[job.id] = Info(position, "preempting", reason, now)
            continue
        if not explain and shadow is not None:
            continue
        when, keys = state.earliest(job, devs)
        if shadow is None:
            shadow = (job.id, when, set(keys))
            first_blocked = job
        # Later jobs see these devices taken from `when` for this job's limit (an estimate for
        # their expected start; only the first reservation is protected, as in EASY).
        for k in keys:
            if state.avail[k] < when + job.time_limit_s:
                state.set_avail(state.devs[k], when + job.time_limit_s)
        expected = None if math.isinf(when) else when
        out.infos[job.id] = Info(position, code, why or "devices busy", expected)
    out.free_at = state.avail
    return out
