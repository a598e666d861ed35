"""Which sharing jobs on one device a waiting sharing job stops to free `short` bytes there.

The set chosen, criteria in order:

1. Priority: no job of a higher priority than needed. The fewest victims of the highest
   priority it must reach, then the fewest of the next one down, and so on: it stops many
   low-priority jobs before one of a higher priority, as the greedy rule before it did.
2. The fewest jobs, which (1) already fixes tier by tier. It comes before the work lost
   because every stop costs a restart that no checkpoint saves (the final checkpoint's write,
   a new process and CUDA context, the data reloaded): two jobs that just checkpointed are
   not cheaper to stop than one that did a minute ago.
3. The least work lost: the device-seconds its victims ran since their newest checkpoint (or
   their start), `Holding.lost_device_s`. Device-seconds, not seconds: a job of four ranks
   loses that time on each of its four devices, as fair share counts its use.
4. The fewest bytes reserved (so equal losses, or jobs that report none, free no more than
   needed: on an 80 GiB device full with 30, 30 and 15 GiB jobs, a 40 GiB job stops a 30 and
   the 15, not both 30s).
5. Equal in all of that: the newest jobs (highest ids), so a pass decides the same way twice.

Jobs already stopping lose nothing more: they count in no tier, and are taken only for bytes
the others leave short, the largest first (the fewest of them).

(1) is found exactly and cheaply: the highest tier needed is the lowest whose jobs, with all
below it, free enough; its count the fewest of its largest that do with all below; and so
down. (3) and (4) are then a depth-first search over how many jobs of each size each tier
gives (of one size and tier, the ones that lose least: a device packed by one sweep is a short
search), its branches cut where they cannot free enough, or cannot lose less (then reserve
fewer bytes) than the best found. Its first answer is each tier's largest, which frees enough
with the counts of (1); past `SEARCH_STEPS` steps (a device packed with a dozen or more jobs
of many sizes) it keeps the best found so far, which may lose more than needed but never
breaks (1) or (2).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gpudeck.services.queue.plan.model import Holding

SEARCH_STEPS = 2000  # the most steps the search for (3, 4) takes; past them, the best so far


def _bytes(h: Holding) -> int:
    return h.share_bytes or 0


def _largest_first(jobs: Iterable[Holding]) -> list[Holding]:
    """Largest first; of one size, the least work lost first, then the newest."""
    return sorted(jobs, key=lambda h: (-_bytes(h), h.lost_device_s, -h.id))


def _counts(tiers: list[list[Holding]], spare: int, short: int) -> list[int] | None:
    """How many jobs each tier (lowest priority first, each largest first) gives, by (1);
    None: all of them with `spare` do not free `short`."""
    below = list(itertools.accumulate((sum(map(_bytes, t)) for t in tiers), initial=spare))
    top = next((i for i in range(len(tiers)) if below[i + 1] >= short), None)
    if top is None:
        return None if spare < short else [0] * len(tiers)
    counts = [0] * len(tiers)
    above = 0  # what the tiers above this one free, each its largest `count`
    for i in range(top, -1, -1):
        taken = itertools.accumulate(map(_bytes, tiers[i]), initial=0)
        counts[i] = next(k for k, freed in enumerate(taken) if above + freed + below[i] >= short)
        above += sum(map(_bytes, tiers[i][: counts[i]]))
    return counts


def _suffix_sums(values: list[int]) -> list[int]:
    return list(itertools.accumulate(reversed(values), initial=0))[::-1]


def _least_sums(groups: list[list[Holding]]) -> list[list[int]]:
    """For each group g, the least work k jobs of groups g on lose, for each k from 0."""
    lost: list[int] = []
    sums: list[list[int]] = []
    for g in reversed(groups):  # each group is least lost first: sorted() merges the runs
        lost = sorted(lost + [h.lost_device_s for h in g])
        sums.append(list(itertools.accumulate(lost, initial=0)))
    return sums[::-1]


@dataclass
class _Search:
    """A depth-first search for (3, 4): how many jobs of each size each tier gives. Jobs of one
    tier and size differ only in the work they lose and their ids, so a count of them is the
    ones losing least, then the newest (5); the first leaf is each tier's largest, and a branch
    stops where even its largest cannot free `need`, or it cannot lose as little as the best
    found (or as little and reserve as few bytes)."""

    groups: list[list[list[Holding]]]  # per tier, its jobs by size, largest size first
    counts: list[int]
    need: int
    steps: int = 0
    best: tuple[int, int, list[int]] | None = None  # (lost, bytes, its ids negated and sorted)
    best_jobs: list[Holding] = field(default_factory=list)

    def __post_init__(self) -> None:
        flat = [[_bytes(h) for g in t for h in g] for t in self.groups]  # largest first
        self.size = [[_bytes(g[0]) for g in t] for t in self.groups]
        self.starts = [list(itertools.accumulate(map(len, t), initial=0)) for t in self.groups]
        self.prefix = [list(itertools.accumulate(f, initial=0)) for f in flat]
        # Each group's lost work taken k at a time (its least lost first), and the least
        # that k jobs of groups g on (of one tier) lose.
        self.lost = [
            [list(itertools.accumulate((h.lost_device_s for h in g), initial=0)) for g in t]
            for t in self.groups
        ]
        self.least_lost = [_least_sums(t) for t in self.groups]
        # What the tiers from i on free at most (each its largest) and at least (its
        # smallest), and the least they lose.
        most = [p[k] for p, k in zip(self.prefix, self.counts, strict=True)]
        least = [p[-1] - p[len(p) - 1 - k] for p, k in zip(self.prefix, self.counts, strict=True)]
        lost = [t[0][k] if t else 0 for t, k in zip(self.least_lost, self.counts, strict=True)]
        self.most_from = _suffix_sums(most)
        self.least_from = _suffix_sums(least)
        self.lost_from = _suffix_sums(lost)

    def run(self, t: int, g: int, left: int, freed: int, lost: int, taken: tuple[int, ...]) -> None:
        """From group g of tier t on, `left` more of tier t to take; `taken`: the count of
        each group so far, tier by tier."""
        self.steps += 1
        if self.steps > SEARCH_STEPS and self.best is not None:
            return
        if g == len(self.groups[t]):
            if left:
                return
            if t + 1 < len(self.groups):
                self.run(t + 1, 0, self.counts[t + 1], freed, lost, taken)
            elif freed >= self.need and (self.best is None or (lost, freed) <= self.best[:2]):
                self._leaf(freed, lost, taken)
            return
        pre, at = self.prefix[t], self.starts[t][g]
        n = len(pre) - 1
        if left > n - at:
            return
        most = freed + pre[at + left] - pre[at] + self.most_from[t + 1]
        least = freed + pre[n] - pre[n - left] + self.least_from[t + 1]
        least_lost = lost + self.least_lost[t][g][left] + self.lost_from[t + 1]
        if most < self.need or (
            self.best is not None and (least_lost, least) > (self.best[0], self.best[1])
        ):
            return
        size, sums = self.size[t][g], self.lost[t][g]
        for c in range(min(left, len(self.groups[t][g])), -1, -1):
            self.run(t, g + 1, left - c, freed + c * size, lost + sums[c], (*taken, c))

    def _leaf(self, freed: int, lost: int, taken: tuple[int, ...]) -> None:
        counts = iter(taken)
        jobs = [h for tier in self.groups for g in tier for h in g[: next(counts)]]
        key = (lost, freed, sorted(-h.id for h in jobs))
        if self.best is None or key < self.best:  # the caller checked (lost, freed) is no worse
            self.best, self.best_jobs = key, jobs


def _least_lost(tiers: list[list[Holding]], counts: list[int], need: int) -> list[Holding]:
    """The jobs, `counts[i]` from tier i, that free `need` bytes losing the least work (3),
    then reserving the fewest bytes (4), then the newest (5); the best found in
    `SEARCH_STEPS` steps past that (at worst each tier's largest)."""
    used = [i for i, k in enumerate(counts) if k]
    if not used:
        return []
    if len(used) == 1 and counts[used[0]] == 1:  # one victim: the cheapest that frees enough
        enough = (h for h in tiers[used[0]] if _bytes(h) >= need)
        return [min(enough, key=lambda h: (h.lost_device_s, _bytes(h), -h.id))]
    groups = [[list(g) for _, g in itertools.groupby(t, key=_bytes)] for t in tiers]
    search = _Search(groups, counts, need)
    search.run(0, 0, counts[0], 0, 0, ())
    return search.best_jobs


def cheapest_victims(candidates: Sequence[Holding], short: int) -> list[Holding] | None:
    """The candidates to stop so that they free at least `short` bytes, by the rule above
    (every candidate may be stopped: the caller has checked); None: all of them do not."""
    if short <= 0:
        return []
    stopping = _largest_first(h for h in candidates if h.stopping)
    by_priority: dict[int, list[Holding]] = {}
    for h in candidates:
        if not h.stopping:
            by_priority.setdefault(h.priority, []).append(h)
    tiers = [_largest_first(by_priority[p]) for p in sorted(by_priority)]
    counts = _counts(tiers, sum(map(_bytes, stopping)), short)
    if counts is None:
        return None
    chosen = _least_lost(tiers, counts, short - sum(map(_bytes, stopping)))
    left = short - sum(map(_bytes, chosen))
    for h in stopping:
        if left <= 0:
            break
        chosen.append(h)
        left -= _bytes(h)
    return chosen
