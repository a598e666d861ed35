"""One scheduling pass, as a pure function: the cluster and the queue in, decisions out.

No database, no clock, no I/O: `services.queue` reads the state and applies the decisions, the
trace replay in bench/scheduler.py drives the same function with a simulated clock, and the
property tests call it directly. The rules (docs/scheduler.md):

- Order: priority (higher first), then fair share (less recent usage first), then age.
- Gang placement: all of a job's devices at once or none, on one node or several. Explicit
  devices wait for exactly those (on any nodes); a count takes any free devices of its node
  whose free memory holds its estimate; a count spread over nodes takes the same number on
  each of the fewest nodes it allows that have them (best fit: the nodes with the fewest
  free devices that suffice). A device with a process GPUDeck did not start, or on a node
  that stopped reporting (offline), is busy.
- EASY backfill: the first job that cannot start gets a reservation (the earliest time its
  devices are free, from the time limits of the jobs holding them); a job further down starts
  now only if it cannot delay that reservation (it ends before it, or uses other devices).
- Quotas: a user's jobs never hold more than `max_devices` devices at once.
- Dependencies: a job waits until all it depends on succeeded; if one failed, was cancelled,
  lost or timed out, the job is cancelled with that reason.
- Preemption: a job that cannot start now may stop running `preemptible` jobs of lower
  priority (whole jobs, fewest first) when their devices let it start: on its node, its named
  devices, or, for a count spread over nodes, a placement by its own rule; it then waits for
  them to stop with a final checkpoint (they are queued again, to resume).
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Literal

from gpudeck.schemas.jobs import ReasonCode

Key = tuple[str, str]  # (node, uuid)
FAILED_DEPENDENCY = frozenset({"failed", "cancelled", "lost", "timeout", "stopped_early"})
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
    online: bool = True  # its node reports (sampler heartbeat): only then may a job start on it
    releasing: bool = False  # its holder ended; its node has not confirmed its ranks are gone
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
    # When it is expected to end: from its measured rate, else from how long its owner's
    # jobs ran against their limits (never past its time limit: `estimated`); or its start
    # plus its time limit, by which it holds nothing.
    ends_at: float
    priority: int = 0
    preemptible: bool = False  # running and marked preemptible: may be stopped for a higher one
    stopping: bool = False  # its preemption was already asked for: it frees its devices soon
    estimated: bool = False  # ends_at is an estimate, not its time limit
    sweep: int | None = None  # the sweep it is a member of
    ended: bool = False  # it has ended; its devices are releasing (a node has not confirmed)


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
    # Named devices on several nodes: the node of each of `requested` (None: all on `node`).
    requested_nodes: tuple[str, ...] | None = None
    # A count spread over nodes: the node counts it may run on, fewest first (each divides
    # world_size; `node` is then ignored). None: a count on `node`, or named devices.
    node_counts: tuple[int, ...] | None = None
    # A sweep's member: its sweep, and how many of that sweep's members may run at once.
    sweep: int | None = None
    sweep_max_parallel: int | None = None
    # The (node, uuid) of each named device, in rank order; None: a count.
    wanted: tuple[Key, ...] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        wanted = None
        if self.requested is not None:
            nodes = self.requested_nodes or (self.node,) * len(self.requested)
            wanted = tuple(zip(nodes, self.requested, strict=True))
        object.__setattr__(self, "wanted", wanted)


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
    # True when some job ahead is counted for its whole time limit (no measured rate yet):
    # the job will likely start sooner than `expected_start`.
    from_time_limits: bool = False


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
        # Devices whose `avail` is a time limit (an upper bound), not an estimate.
        self.bound: set[Key] = {k for h in holding if not h.estimated for k in h.devices}
        self.holder: dict[Key, int | None] = {d.key: d.holder for d in devices}
        # When each device is (expected to be) free: now, a holder's end, or never.
        self.avail: dict[Key, float] = {}
        self.free: set[Key] = set()
        self.free_count = Counter[str]()
        for d in devices:
            if d.external or not d.online:
                self.avail[d.key] = NEVER
            elif d.holder is not None:
                self.avail[d.key] = max(now, ends.get(d.key, NEVER))
            else:
                self.avail[d.key] = now
                self.free.add(d.key)
                self.free_count[d.node] += 1
        self.free_total = len(self.free)
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
        # Members running per sweep: until a member has ended, whatever its estimate says (one
        # past its last step still writes its final checkpoint); an ended one's devices, still
        # releasing, count no more.
        self.sweep_running = Counter(
            h.sweep for h in holding if h.sweep is not None and not h.ended
        )
        # Busy reasons depend only on which devices are free: cached until a job starts.
        self.reasons: dict[tuple[object, ...], str] = {}

    def take(self, job_id: int, devs: Sequence[Dev], until: float) -> None:
        for d in devs:
            if d.key in self.free:
                self.free.discard(d.key)
                self.free_count[d.node] -= 1
                self.free_total -= 1
            self.holder[d.key] = job_id
            self.set_avail(d, until, bound=True)
        self.reasons.clear()

    def set_avail(self, dev: Dev, when: float, *, bound: bool) -> None:
        row = self.profile[dev.node]
        row.remove((self.avail[dev.key], dev.index, dev.key))
        self.avail[dev.key] = when
        bisect.insort(row, (when, dev.index, dev.key))
        if bound:
            self.bound.add(dev.key)
        else:
            self.bound.discard(dev.key)

    def candidates(self, job: Waiting) -> list[Dev] | None:
        """The devices the job may use at all; None when it names one that does not exist.
        (A count spread over nodes chooses among all of them: `choose_spread`.)"""
        if job.node_counts is not None:
            return []
        if job.wanted is None:
            return self.by_node.get(job.node, [])
        found = [self.devs.get(k) for k in job.wanted]
        return None if any(d is None for d in found) else [d for d in found if d is not None]

    def cannot_start(self, job: Waiting) -> bool:
        """A job that cannot start now, found without building a list or a reason (False:
        look closer). The common case in a long queue."""
        if job.node_counts is not None:
            return self.free_total < job.world_size
        if job.wanted is not None:
            return any(k not in self.free for k in job.wanted)
        return self.free_count[job.node] < job.world_size

    def earliest(self, job: Waiting, devs: list[Dev]) -> tuple[float, list[Key]]:
        """When the job could start at the soonest, on which devices (from time limits)."""
        if job.node_counts is not None:
            return self._earliest_spread(job)
        if job.requested is not None:
            keys = [d.key for d in devs]
            return max((self.avail[k] for k in keys), default=NEVER), keys
        if len(devs) < job.world_size:
            return NEVER, []
        soonest = self.profile[job.node][: job.world_size]
        return soonest[-1][0], [k for _, _, k in soonest]

    def _earliest_spread(self, job: Waiting) -> tuple[float, list[Key]]:
        """The soonest moment some allowed number of nodes each have their share free (the
        fewest nodes on a tie), and those devices."""
        best: tuple[float, list[Key]] = (NEVER, [])
        for m in job.node_counts or ():
            per = job.world_size // m
            ready = sorted(
                (row[per - 1][0], node) for node, row in self.profile.items() if len(row) >= per
            )
            if len(ready) >= m and ready[m - 1][0] < best[0]:
                keys = [k for _, node in ready[:m] for _, _, k in self.profile[node][:per]]
                best = (ready[m - 1][0], keys)
        return best

    def busy_reason(self, job: Waiting, devs: list[Dev]) -> str:
        cache_key = (job.node, job.wanted, job.world_size, job.bytes_per_device, job.node_counts)
        reason = self.reasons.get(cache_key)
        if reason is None:
            reason = self.reasons[cache_key] = self._busy_reason(job, devs)
        return reason

    def _why_held(self, d: Dev) -> str:
        if not d.online:
            return "offline"
        if d.external:
            return "used by another process"
        if d.releasing:
            job = self.holder[d.key]
            return f"releasing from job {job} (until its node confirms its ranks are gone)"
        return f"held by job {self.holder[d.key]}"

    def _busy_reason(self, job: Waiting, devs: list[Dev]) -> str:
        if job.node_counts is not None:
            shapes = " or ".join(f"{m} x {job.world_size // m}" for m in job.node_counts)
            per_node = [f"{n} {c}" for n, c in sorted(self.free_count.items()) if c > 0]
            listed = ", ".join(per_node[:6])
            if len(per_node) > 6:
                listed += f" and {len(per_node) - 6} more"
            return (
                f"devices busy: needs {shapes} (nodes x devices) free on online nodes; "
                f"free now: {listed or 'none'}"
            )
        held = [d for d in devs if d.key not in self.free]
        names = ", ".join(f"{d.node}/{d.index} {self._why_held(d)}" for d in held[:4])
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


def _choose_spread(state: _State, job: Waiting, shadow: Set[Key]) -> tuple[list[Dev], str | None]:
    """A count spread over nodes: its share on each of the fewest nodes it allows that have
    it free, node by node in rank order; best fit (the nodes with the fewest free devices
    that suffice first, keeping whole nodes for larger jobs), nodes that need no device of
    the reservation before those that do. Or a reason it cannot start now."""
    if state.free_total < job.world_size:
        return [], state.busy_reason(job, [])
    # Whether it fits depends only on which devices are free: a refusal is cached until a job
    # starts (a long queue of alike spread jobs is then one look, not one per job).
    refused = ("spread", job.world_size, job.node_counts, job.bytes_per_device)
    if refused in state.reasons:
        return [], state.reasons[refused]
    chosen, why = _spread_now(state, job, shadow)
    if why is not None:
        state.reasons[refused] = why
    return chosen, why


def _spread_now(
    state: _State, job: Waiting, shadow: Set[Key], free_keys: Set[Key] | None = None
) -> tuple[list[Dev], str | None]:
    """`free_keys`: the devices to place it on, if not those free now (a preemption's)."""
    free: dict[str, list[Dev]] = {}
    fitting: dict[str, list[Dev]] = {}
    for node, devs in state.by_node.items():
        if free_keys is None and state.free_count[node] == 0:
            continue  # nothing free there: no list to build
        usable = state.free if free_keys is None else free_keys
        on_node = [d for d in devs if d.key in usable]
        if on_node:
            free[node] = on_node
            fitting[node] = [d for d in on_node if _fits(d, job.bytes_per_device)]
    for m in job.node_counts or ():
        per = job.world_size // m
        ok = [n for n, devs in fitting.items() if len(devs) >= per]
        if len(ok) < m:
            continue

        def rank(n: str, per: int = per) -> tuple[bool, int, str]:
            spare = sum(1 for d in fitting[n] if d.key not in shadow)
            return (spare < per, len(fitting[n]), n)

        chosen: list[Dev] = []
        for n in sorted(ok, key=rank)[:m]:
            mine = sorted(fitting[n], key=lambda d: (d.key in shadow, d.index))[:per]
            chosen.extend(sorted(mine, key=lambda d: d.index))
        return chosen, None
    for m in job.node_counts or ():
        if sum(1 for devs in free.values() if len(devs) >= job.world_size // m) >= m:
            return [], (
                f"insufficient memory: too few free devices hold its estimate to place "
                f"{m} x {job.world_size // m} (nodes x devices)"
            )
    return [], state.busy_reason(job, [])


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
        if h is None or d.external or not d.online or d.key in protected:
            return None
        if h.priority >= job.priority:
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


def _spread_victims(
    state: _State, job: Waiting, protected: Set[Key]
) -> tuple[list[Holding], list[Dev]]:
    """For a count spread over nodes: the running preemptible jobs of lower priority whose
    devices, with the free ones, let the job be placed by its own rule (`_spread_now`), and
    the devices it would take; empty when no such set exists. Whole jobs, chosen as
    `_victims` does (those already stopping first, then the lowest priority, then the
    largest), then each one the placement can do without is spared. A device in another
    job's reservation is never taken."""

    def usable(h: Holding) -> set[Key]:
        return {
            k
            for k in h.devices
            if k in state.devs
            and state.holder.get(k) == h.id
            and state.devs[k].online
            and not state.devs[k].external
            and k not in protected
        }

    freed = {
        h.id: keys
        for h in state.holdings.values()
        if h.preemptible
        and h.priority < job.priority
        and h.id not in state.claimed
        and (keys := usable(h))
    }
    order = sorted(
        (state.holdings[i] for i in freed),
        key=lambda h: (not h.stopping, h.priority, -len(h.devices)),
    )
    free_now = {k for k in state.free if k not in protected}

    def place(victims: list[Holding]) -> list[Dev]:
        keys = free_now.union(*(freed[h.id] for h in victims))
        return _spread_now(state, job, _EMPTY, keys)[0]

    victims: list[Holding] = []
    for h in order:
        victims.append(h)
        if place(victims):
            break
    else:
        return [], []
    for h in list(victims[:-1]):  # the last one was needed: without it, no placement
        fewer = [v for v in victims if v is not h]
        if place(fewer):
            victims = fewer
    chosen = place(victims)
    keys = {d.key for d in chosen}
    return [h for h in victims if freed[h.id] & keys], chosen


def _preemption(
    state: _State, job: Waiting, devs: list[Dev], protected: Set[Key]
) -> tuple[list[Holding], list[Dev]]:
    """The victims that let `job` start, and the devices it takes once they stop (`devs`, or a
    count spread's own placement); no victims when none do.

    Found only from which devices are free, held and protected, so a refusal holds until a job
    of the pass takes devices (`take` clears it; a claim only takes devices away): a long
    queue of alike jobs above a preemptible one is one search, not one a job. (One protected
    set a pass: the reservation, once there is one.)"""
    spread = job.node_counts is not None
    refused = (
        "victims",
        None if spread else job.node,  # a spread's node is only where it would go, idle
        job.wanted,
        job.node_counts,
        job.world_size,
        job.bytes_per_device,
        job.priority,
        bool(protected),
    )
    if refused in state.reasons:
        return [], devs
    if spread:
        victims, devs = _spread_victims(state, job, protected)
    else:
        victims = _victims(state, job, devs, protected)
    if not victims:
        state.reasons[refused] = ""
    return victims, devs


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
        state.set_avail(d, until, bound=True)
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
    run_shares: Mapping[str, float] | None = None,
) -> Plan:
    """Decide which waiting jobs start now, which are cancelled, and why the others wait.

    `explain=False` (the scheduler's latency-critical passes) decides the same starts,
    cancels and preemptions but skips what only explains: past the first blocked job (the
    reservation backfill protects), a job that cannot start gets no expected start, and the
    devices are not reserved ahead for it (only `infos` and `free_at` differ).

    `run_shares`: per owner, the share of its time limit a job of theirs is expected to run
    (services.queue.run_shares), for the expected starts of the jobs behind a waiting one;
    an owner without one: the whole limit."""
    usage = usage or {}
    run_shares = run_shares or {}
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
        cap = job.sweep_max_parallel
        if job.sweep is not None and cap is not None and state.sweep_running[job.sweep] >= cap:
            # Slurm's job array %N: its members start one for one as others end.
            running = state.sweep_running[job.sweep]
            reason = f"sweep {job.sweep}: {running} members running (max_parallel {cap})"
            out.infos[job.id] = Info(position, "sweep", reason, None)
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
        spread = job.node_counts is not None
        if (
            not explain
            and shadow is not None
            and state.cannot_start(job)
            and job.priority <= state.preemptible_floor
        ):
            continue  # cannot start, preempts nobody: the rest would only explain why
        devs = state.candidates(job)
        if devs is None:  # a named device left the inventory: it waits for its return
            out.infos[job.id] = Info(position, "devices_busy", "devices busy: gone", None)
            continue
        if spread:
            chosen, why = _choose_spread(state, job, shadow[2] if shadow else _EMPTY)
        else:
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
                if job.sweep is not None:
                    state.sweep_running[job.sweep] += 1
                out.starts.append(Start(job.id, tuple(chosen)))
                position -= 1
                continue
            assert shadow is not None
            code, why = "priority", f"priority: its devices are reserved for job {shadow[0]}"
        protected = shadow[2] if shadow is not None else _EMPTY
        victims: list[Holding] = []
        if code == "devices_busy" and job.priority > state.preemptible_floor:
            victims, devs = _preemption(state, job, devs, protected)
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
        # Later jobs see these devices taken from `when` for as long as this job is expected
        # to run (for their expected start; only the first reservation is protected, as in
        # EASY, and it is protected from `when` on whatever the estimate).
        from_limits = any(k in state.bound for k in keys)
        share = run_shares.get(job.owner)
        run = job.time_limit_s * (share if share is not None else 1.0)
        for k in keys:
            if state.avail[k] < when + run:
                state.set_avail(state.devs[k], when + run, bound=from_limits or share is None)
        expected = None if math.isinf(when) else when
        out.infos[job.id] = Info(position, code, why or "devices busy", expected, from_limits)
    out.free_at = state.avail
    return out


def choose_spread(
    devices: Sequence[Dev],
    world_size: int,
    node_counts: tuple[int, ...],
    bytes_per_device: int | None = None,
) -> list[Dev] | None:
    """The pass's choice for a count spread over nodes, among `devices` as they are now (in
    rank order), or None: the submit's fast path, and its check that the job can ever run
    (on the devices as if idle), follow the same rule as the scheduler."""
    job = Waiting(
        id=0,
        owner="",
        node="",
        world_size=world_size,
        submitted_at=0.0,
        time_limit_s=0.0,
        bytes_per_device=bytes_per_device,
        node_counts=node_counts,
    )
    chosen, _ = _choose_spread(_State(devices, [], 0.0), job, _EMPTY)
    return chosen or None
