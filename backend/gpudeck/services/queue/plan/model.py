"""The scheduling pass's values: devices, the jobs holding and waiting for them, the policy,
and the decisions a pass returns. Plain frozen dataclasses: the pass reads no database."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from gpudeck.schemas.jobs import ReasonCode

Key = tuple[str, str]  # (node, uuid)
FAILED_DEPENDENCY = frozenset({"failed", "cancelled", "lost", "timeout", "stopped_early"})
NEVER = math.inf
EMPTY: frozenset[Key] = frozenset()  # no devices: no reservation to protect yet


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
    # Sharing by memory (plan/sharing.py): usable memory when idle (None: unknown), the bytes
    # live shared allocations reserve on it and their owners, whether it is held whole, and
    # whether its node lets jobs share (and across users).
    capacity_bytes: int | None = None
    shared_bytes: int = 0
    share_owners: frozenset[str] = frozenset()
    whole: bool = False
    shareable: bool = False
    share_across_users: bool = False
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
    # Its whole run at its measured rate (all its steps over the rate); None: no rate yet. A
    # sweep's waiting members are expected to run as long (plan.sweep_slots).
    run_s: float | None = None
    # A job sharing its devices by memory: its reservation on each (None: whole devices). It
    # frees those bytes when stopped; its device comes free only with every job sharing it.
    share_bytes: int | None = None
    # The seconds it has run since the point a resume would restart it from, at the pass's
    # now: its newest checkpoint, or its start when it has none since (snapshot). Stopping it
    # now throws them away on each of its devices: `lost_device_s`.
    unsaved_s: float = 0.0
    # The work stopping it now loses, in whole device-seconds (victim sets are compared by
    # sums of them, and whole numbers add up the same in any order).
    lost_device_s: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Computed once: a victims' search reads it for every set it weighs.
        object.__setattr__(self, "lost_device_s", round(self.unsaved_s * len(self.devices)))


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
    # A job sharing its devices by memory: its reservation on each (None: whole devices).
    share_bytes: int | None = None
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


@dataclass(frozen=True)
class Reservation:
    """EASY's one protected reservation: the first job that cannot start, the earliest moment
    its devices are free, and those devices."""

    job_id: int
    at: float
    devices: frozenset[Key]


@dataclass
class Plan:
    starts: list[Start] = field(default_factory=list)
    cancels: list[tuple[int, str]] = field(default_factory=list)
    # (running job to stop and queue again, the waiting job it makes room for)
    preempts: list[tuple[int, int]] = field(default_factory=list)
    infos: dict[int, Info] = field(default_factory=dict)
    # When each device is next free once every waiting job is placed as estimated (NEVER:
    # not expected): what a job submitted after this pass would find (services.queue.summary).
    free_at: dict[Key, float] = field(default_factory=dict)
    # Each device open to sharing jobs once the waiting ones are placed: (its index, its
    # reservation room in bytes), for the submit answer of a sharing job (queue.summary).
    room: dict[Key, tuple[int, int]] = field(default_factory=dict)


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


def fits(dev: Dev, need: int | None) -> bool:
    """Whether the device's usable memory holds `need` bytes (no estimate or no reading: yes)."""
    return need is None or dev.usable_bytes is None or dev.usable_bytes >= need
