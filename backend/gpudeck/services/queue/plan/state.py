"""The devices as one pass sees them: who holds each, when each frees up, and why a job's
devices are busy. The pass's steps read and update one `DeviceState`."""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Sequence

from gpudeck.services.queue.plan.model import NEVER, Dev, Holding, Key, Waiting, fits


class DeviceState:
    """The devices as the pass sees them: who holds what now, and when each frees up."""

    def __init__(self, devices: Sequence[Dev], holding: Sequence[Holding], now: float) -> None:
        self.now = now
        self.devs = {d.key: d for d in devices}
        self.by_node: dict[str, list[Dev]] = {}
        for d in sorted(devices, key=lambda d: (d.node, d.index)):
            self.by_node.setdefault(d.node, []).append(d)
        ends: dict[Key, float] = {}
        for h in holding:  # a shared device frees when the last of its sharing jobs ends
            for k in h.devices:
                ends[k] = max(ends.get(k, h.ends_at), h.ends_at)
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
        # Sharing by memory (plan/sharing.py): each device open to sharing jobs (online, no
        # outside process, not held whole) -> its reservation room, and the sharing jobs'
        # owners on each.
        self.room: dict[Key, int] = {
            d.key: d.capacity_bytes - d.shared_bytes
            for d in devices
            if d.capacity_bytes is not None and d.online and not d.external and not d.whole
        }
        self.share_owners: dict[Key, frozenset[str]] = {d.key: d.share_owners for d in devices}
        # The sharing jobs on each shared device (those placed by this pass too) and each
        # job's owner: a device comes free only when all of them stop (plan/preempt.py).
        self.sharers: dict[Key, list[int]] = {}
        self.owner_of: dict[int, str] = {h.id: h.owner for h in holding}
        for h in holding:
            if h.share_bytes is not None:
                for k in h.devices:
                    self.sharers.setdefault(k, []).append(h.id)
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
            self.room.pop(d.key, None)  # held whole: no sharing job fits beside it
            if d.key in self.free:
                self.free.discard(d.key)
                self.free_count[d.node] -= 1
                self.free_total -= 1
            self.holder[d.key] = job_id
            self.set_avail(d, until, bound=True)
        self.reasons.clear()

    def occupants(self, key: Key) -> list[int]:
        """The jobs that must all stop for the device to come free: its sharing jobs, else
        its holder (none: it is free, or busy for no job, offline or an outside process)."""
        if sharers := self.sharers.get(key):
            return sharers
        holder = self.holder.get(key)
        return [holder] if holder is not None else []

    def take_shared(
        self, job_id: int, owner: str, devs: Sequence[Dev], need: int, until: float
    ) -> None:
        """A sharing job placed: its share leaves each device's room, which no job may now
        take whole until every sharing job on it has ended."""
        self.owner_of[job_id] = owner
        for d in devs:
            if d.key in self.free:
                self.free.discard(d.key)
                self.free_count[d.node] -= 1
                self.free_total -= 1
            self.room[d.key] -= need
            self.share_owners[d.key] = self.share_owners[d.key] | {owner}
            self.sharers.setdefault(d.key, []).append(job_id)
            if self.holder[d.key] is None:
                self.holder[d.key] = job_id
            self.set_avail(d, max(self.avail[d.key], until), bound=True)
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
        if job.share_bytes is not None:
            return False  # a sharing job may fit beside others: look closer
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
        free = sum(1 for d in devs if d.key in self.free and fits(d, job.bytes_per_device))
        return f"devices busy: needs {job.world_size} on {job.node}, {free} free" + (
            f" ({names}{more})" if names else ""
        )
