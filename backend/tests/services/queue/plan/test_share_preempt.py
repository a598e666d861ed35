"""Preemption that counts sharing by memory, in the pure pass: a job taking devices whole frees
a shared device only by stopping every job sharing it (each preemptible and of lower
priority); a sharing job stops the sharing jobs that make its reservation fit, no higher a
priority than needed, then the fewest, then the least work lost since their last checkpoint,
then the fewest bytes, and stops a job holding a device whole only where no device fits by
fewer victims; what a pass claims stays claimed; a job that may not be stopped never is."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from gpudeck.services.queue.plan import Dev, Holding, Plan, Waiting, plan
from gpudeck.services.queue.plan.share_victims import cheapest_victims

GiB = 1024**3
MiB = 1024**2
NOW = 1000.0
CAPACITY = 76 * GiB  # an 80 GiB device less its margin


def shared_dev(index: int, *sharers: Holding, **kw: object) -> Dev:
    """Device `index` of node n, shared by `sharers` (none: idle), open to sharing jobs."""
    return Dev(
        "n",
        f"u{index}",
        index,
        holder=sharers[0].id if sharers else None,
        capacity_bytes=CAPACITY,
        shared_bytes=sum(h.share_bytes or 0 for h in sharers),
        share_owners=frozenset(h.owner for h in sharers),
        shareable=True,
        **kw,  # type: ignore[arg-type]
    )


def whole_dev(index: int, holder: int) -> Dev:
    return Dev("n", f"u{index}", index, holder=holder, capacity_bytes=CAPACITY, whole=True,
               shareable=True)  # fmt: skip


def sharer(
    job_id: int, index: int, nbytes: int, *, priority: int = 0, preemptible: bool = True,
    owner: str = "ada", stopping: bool = False, unsaved_s: float = 0.0, world_size: int = 1,
) -> Holding:  # fmt: skip
    """A sharing job on device `index` (and, past one rank, on devices of another node)."""
    devices = (("n", f"u{index}"), *(("m", f"u{r}") for r in range(1, world_size)))
    return Holding(job_id, owner, devices, NOW + 3600, priority=priority, preemptible=preemptible,
                   stopping=stopping, share_bytes=nbytes, unsaved_s=unsaved_s)  # fmt: skip


def holder(
    job_id: int, index: int, *, priority: int = 0, preemptible: bool = True,
    unsaved_s: float = 0.0,
) -> Holding:  # fmt: skip
    return Holding(job_id, "ada", (("n", f"u{index}"),), NOW + 3600, priority=priority,
                   preemptible=preemptible, unsaved_s=unsaved_s)  # fmt: skip


def exclusive(job_id: int, priority: int = 5, world_size: int = 1) -> Waiting:
    return Waiting(job_id, "bob", "n", world_size, float(job_id), 600.0, priority=priority)


def sharing(job_id: int, need: int, priority: int = 5, owner: str = "ada") -> Waiting:
    return Waiting(job_id, owner, "n", 1, float(job_id), 600.0, priority=priority,
                   share_bytes=need)  # fmt: skip


def victims(out: Plan, job_id: int) -> set[int]:
    return {v for v, j in out.preempts if j == job_id}


def test_an_exclusive_job_stops_every_sharing_job_on_a_device_and_claims_it() -> None:
    a, b = sharer(1, 0, 20 * GiB), sharer(2, 0, 30 * GiB)
    devices = [shared_dev(0, a, b)]
    later = sharing(10, GiB, priority=0)  # fits the room beside them: not once it is claimed
    out = plan(devices, [a, b], [exclusive(9), later], now=NOW)
    assert victims(out, 9) == {1, 2} and out.starts == []
    assert out.infos[9].reason_code == "preempting"
    assert "job 1" in out.infos[9].reason and "job 2" in out.infos[9].reason
    assert out.infos[10].reason_code != "preempting" and ("n", "u0") not in out.room


def test_a_device_with_a_sharing_job_that_may_not_be_stopped_is_never_taken() -> None:
    for kept in (
        sharer(2, 0, 30 * GiB, preemptible=False),
        sharer(2, 0, 30 * GiB, priority=5),  # not of lower priority
    ):
        a = sharer(1, 0, 20 * GiB)
        out = plan([shared_dev(0, a, kept)], [a, kept], [exclusive(9)], now=NOW)
        assert out.preempts == [] and out.infos[9].reason_code == "devices_busy"


def test_an_exclusive_job_stops_the_fewest_jobs_whole_device_or_shared() -> None:
    a, b, c = sharer(1, 0, 20 * GiB), sharer(2, 0, 20 * GiB), holder(3, 1)
    out = plan([shared_dev(0, a, b), whole_dev(1, 3)], [a, b, c], [exclusive(9)], now=NOW)
    assert victims(out, 9) == {3}
    # The whole-device holder of a higher priority: the two sharing jobs it is.
    c = holder(3, 1, priority=2)
    out = plan([shared_dev(0, a, b), whole_dev(1, 3)], [a, b, c], [exclusive(9)], now=NOW)
    assert victims(out, 9) == {1, 2}


def test_a_sharing_job_stops_the_fewest_lowest_priority_sharing_jobs_until_it_fits() -> None:
    # 76 GiB: 20 + 30 + 20 reserved, 6 free; 30 GiB needs 24 more.
    small = sharer(1, 0, 20 * GiB, priority=-1)
    large = sharer(2, 0, 30 * GiB)
    low = sharer(3, 0, 20 * GiB, priority=-2)
    out = plan([shared_dev(0, small, large, low)], [small, large, low], [sharing(9, 30 * GiB)],
               now=NOW)  # fmt: skip
    # Lowest priority first (3, then 1): 6 + 20 + 20 fits; job 2 of priority 0 stays.
    assert victims(out, 9) == {1, 3}
    assert out.infos[9].reason_code == "preempting" and out.starts == []
    # Of equal priority: the largest reservation alone, not two small ones.
    same = [sharer(1, 0, 20 * GiB), sharer(2, 0, 30 * GiB), sharer(3, 0, 20 * GiB)]
    out = plan([shared_dev(0, *same)], same, [sharing(9, 30 * GiB)], now=NOW)
    assert victims(out, 9) == {2}


def test_a_sharing_job_stops_a_whole_device_job_only_where_no_device_fits_by_fewer() -> None:
    a, b = sharer(1, 0, 40 * GiB), sharer(2, 0, 30 * GiB)
    c = holder(3, 1)
    devices = [shared_dev(0, a, b), whole_dev(1, 3)]
    # One sharing victim frees enough on device 0: not the whole job. Either one would do
    # (6 + 40 or 6 + 30); the smaller loses less.
    out = plan(devices, [a, b, c], [sharing(9, 30 * GiB)], now=NOW)
    assert victims(out, 9) == {2}
    # 70 GiB needs both sharing jobs gone: the one whole-device job is fewer.
    out = plan(devices, [a, b, c], [sharing(9, 70 * GiB)], now=NOW)
    assert victims(out, 9) == {3}
    # Device 0 full: a later sharing job of the pass finds device 1 closed too, its holder
    # still on it until it has stopped.
    full = sharer(2, 0, 36 * GiB)
    devices = [shared_dev(0, a, full), whole_dev(1, 3)]
    out = plan(devices, [a, full, c], [sharing(9, 70 * GiB), sharing(10, GiB, 0)], now=NOW)
    assert victims(out, 9) == {3} and out.starts == []
    assert out.infos[10].reason_code == "insufficient_memory"


def test_the_room_a_preemption_makes_is_not_taken_by_a_later_job_of_the_pass() -> None:
    a, b = sharer(1, 0, 30 * GiB), sharer(2, 0, 30 * GiB, preemptible=False)
    devices = [shared_dev(0, a, b)]  # 16 GiB free
    low = sharing(10, 10 * GiB, priority=0)  # fits the 16 free now, but 16 + 30 - 40 = 6
    out = plan(devices, [a, b], [sharing(9, 40 * GiB), low], now=NOW)
    assert victims(out, 9) == {1} and out.starts == []
    assert out.room[("n", "u0")][1] == 6 * GiB
    small = sharing(11, 5 * GiB, priority=0)  # what is left both now and after: it starts
    out = plan(devices, [a, b], [sharing(9, 40 * GiB), small], now=NOW)
    assert [s.job_id for s in out.starts] == [11]


def test_another_users_sharing_job_must_go_where_users_do_not_share() -> None:
    mine = sharer(1, 0, 20 * GiB)
    theirs = sharer(2, 0, 10 * GiB, owner="cy")
    devices = [shared_dev(0, mine, theirs)]  # 46 GiB free, but cy's job is on it
    out = plan(devices, [mine, theirs], [sharing(9, 10 * GiB)], now=NOW)
    assert victims(out, 9) == {2}
    kept = sharer(2, 0, 10 * GiB, owner="cy", preemptible=False)
    out = plan([shared_dev(0, mine, kept)], [mine, kept], [sharing(9, 10 * GiB)], now=NOW)
    assert out.preempts == []


def test_a_sharing_job_stops_the_set_that_loses_least_among_the_fewest() -> None:
    # 30 + 30 + 15 of the 76 usable, 1 GiB free; 40 GiB needs 39 more. Two jobs either way:
    # a 30 and the 15 (45 GiB lost), not both 30s (60). Of the two 30s, the newer (job 2).
    jobs = [sharer(1, 0, 30 * GiB), sharer(2, 0, 30 * GiB), sharer(3, 0, 15 * GiB)]
    out = plan([shared_dev(0, *jobs)], jobs, [sharing(9, 40 * GiB)], now=NOW)
    assert victims(out, 9) == {2, 3} and out.infos[9].reason_code == "preempting"


def test_priority_still_comes_before_fewer_jobs_and_fewer_bytes() -> None:
    # The 15 is of a higher priority: both 30s go, though they lose more.
    jobs = [sharer(1, 0, 30 * GiB, priority=-1), sharer(2, 0, 30 * GiB, priority=-1),
            sharer(3, 0, 15 * GiB)]  # fmt: skip
    out = plan([shared_dev(0, *jobs)], jobs, [sharing(9, 40 * GiB)], now=NOW)
    assert victims(out, 9) == {1, 2}
    # Three low ones before one higher one that alone would do: 6 free + 3 x 10 holds 36.
    low = [sharer(i, 0, 10 * GiB, priority=-1) for i in (1, 2, 3)]
    jobs = [*low, sharer(4, 0, 40 * GiB)]
    out = plan([shared_dev(0, *jobs)], jobs, [sharing(9, 36 * GiB)], now=NOW)
    assert victims(out, 9) == {1, 2, 3}


def test_equal_jobs_are_chosen_the_same_way_whatever_their_order() -> None:
    jobs = [sharer(i, 0, 19 * GiB) for i in (4, 1, 3, 2)]  # 76 GiB: full
    for order in (jobs, jobs[::-1], sorted(jobs, key=lambda h: h.id)):
        dev = shared_dev(0, *order)
        out = plan([dev], order, [sharing(9, 19 * GiB)], now=NOW)
        assert victims(out, 9) == {4}  # the newest
        out = plan([dev], order, [sharing(9, 38 * GiB)], now=NOW)
        assert victims(out, 9) == {3, 4}


def test_of_the_fewest_the_set_that_loses_least_work_goes_before_the_fewest_bytes() -> None:
    # 30 + 30 + 15 of the 76 usable; 40 GiB needs 39 more: a 30 and the 15 free the fewest
    # bytes, but the 15 has run 10 minutes since its last checkpoint and the 30s just wrote
    # theirs: both 30s go (60 GiB, no work lost).
    jobs = [sharer(1, 0, 30 * GiB), sharer(2, 0, 30 * GiB), sharer(3, 0, 15 * GiB, unsaved_s=600)]
    out = plan([shared_dev(0, *jobs)], jobs, [sharing(9, 40 * GiB)], now=NOW)
    assert victims(out, 9) == {1, 2}
    # One victim of two alike: the one that just checkpointed, older or newer.
    for fresh, stale in ((1, 2), (2, 1)):
        jobs = [sharer(fresh, 0, 30 * GiB, unsaved_s=5),
                sharer(stale, 0, 30 * GiB, unsaved_s=600)]  # fmt: skip
        out = plan([shared_dev(0, *jobs)], jobs, [sharing(9, 30 * GiB)], now=NOW)
        assert victims(out, 9) == {fresh}
    # Work lost on every device: 4 minutes on two devices lose more than 6 minutes on one.
    jobs = [sharer(1, 0, 30 * GiB, unsaved_s=240, world_size=2),
            sharer(2, 0, 30 * GiB, unsaved_s=360)]  # fmt: skip
    out = plan([shared_dev(0, *jobs)], jobs, [sharing(9, 30 * GiB)], now=NOW)
    assert victims(out, 9) == {2}
    # Fewer jobs still come first (each stop costs a restart): 35 GiB needs 34 more, and the
    # stale 40 alone goes, not the fresh 20 and 15.
    jobs = [sharer(1, 0, 40 * GiB, unsaved_s=600), sharer(2, 0, 20 * GiB),
            sharer(3, 0, 15 * GiB)]  # fmt: skip
    out = plan([shared_dev(0, *jobs)], jobs, [sharing(9, 35 * GiB)], now=NOW)
    assert victims(out, 9) == {1}


def test_of_devices_alike_a_sharing_job_stops_where_less_work_is_lost() -> None:
    stale, fresh = sharer(1, 0, 70 * GiB, unsaved_s=600), sharer(2, 1, 70 * GiB, unsaved_s=5)
    out = plan([shared_dev(0, stale), shared_dev(1, fresh)], [stale, fresh],
               [sharing(9, 30 * GiB)], now=NOW)  # fmt: skip
    assert victims(out, 9) == {2}


def test_an_exclusive_job_stops_the_holder_that_loses_least_of_those_alike() -> None:
    stale, fresh = holder(1, 0, unsaved_s=600), holder(2, 1, unsaved_s=5)
    devices = [whole_dev(0, 1), whole_dev(1, 2)]
    out = plan(devices, [stale, fresh], [exclusive(9)], now=NOW)
    assert victims(out, 9) == {2}
    # Priority still first: a lower-priority job goes, however much it loses.
    low = holder(1, 0, priority=-1, unsaved_s=600)
    out = plan(devices, [low, fresh], [exclusive(9)], now=NOW)
    assert victims(out, 9) == {1}


def test_a_device_packed_with_many_jobs_frees_enough_by_the_fewest() -> None:
    # 16 jobs of one priority, 2 to 7 GiB (74 GiB, 2 free); 41 GiB needs 39 more: seven jobs
    # at the fewest, and of the ways to take seven, one loses exactly the 39.
    sizes = [2, 3, 4, 5, 6, 7, 2, 3, 4, 5, 6, 7, 5, 5, 5, 5]
    jobs = [sharer(i + 1, 0, n * GiB) for i, n in enumerate(sizes)]
    out = plan([shared_dev(0, *jobs)], jobs, [sharing(9, 41 * GiB)], now=NOW)
    stopped = [h for h in jobs if h.id in victims(out, 9)]
    assert len(stopped) == 7 and sum(h.share_bytes or 0 for h in stopped) == 39 * GiB
    # 24 jobs of 24 sizes, 2 GiB to 4.2 GiB (74.1 GiB): 22 GiB needs 20.1 more, six jobs at
    # the fewest, and the search for the least bytes runs past its steps: it keeps the best
    # found, which still frees enough with six, and a higher-priority job stays.
    jobs = [sharer(i + 1, 0, 2 * GiB + i * 97 * MiB) for i in range(24)]
    jobs[-1] = sharer(24, 0, jobs[-1].share_bytes or 0, priority=3)
    out = plan([shared_dev(0, *jobs)], jobs, [sharing(9, 22 * GiB)], now=NOW)
    stopped = [h for h in jobs if h.id in victims(out, 9)]
    free = CAPACITY - sum(h.share_bytes or 0 for h in jobs)
    assert free + sum(h.share_bytes or 0 for h in stopped) >= 22 * GiB
    assert len(stopped) == 6 and 24 not in victims(out, 9)


def _brute_key(chosen: tuple[Holding, ...], tiers: list[int]) -> tuple[object, ...]:
    profile = tuple(sum(h.priority == p and not h.stopping for h in chosen) for p in tiers)
    lost = sum(h.lost_device_s for h in chosen if not h.stopping)
    reserved = sum(h.share_bytes or 0 for h in chosen if not h.stopping)
    return (profile, lost, reserved, sum(h.stopping for h in chosen))


# A sharing job: GiB, priority, stopping, minutes since its last checkpoint, ranks.
_SHARER = st.tuples(st.integers(1, 30), st.integers(-1, 1), st.booleans(), st.integers(0, 4),
                    st.integers(1, 2))  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_SHARER, max_size=8), st.integers(-5, 120))
def test_the_choice_is_the_best_of_every_set_that_frees_enough(
    jobs: list[tuple[int, int, bool, int, int]], short: int
) -> None:
    # Few distinct losses (0 to 4 minutes, on 1 or 2 devices): ties between them are common,
    # so the bytes after them are checked too.
    held = [
        sharer(i + 1, 0, n, priority=p, stopping=s, unsaved_s=60.0 * m, world_size=w)
        for i, (n, p, s, m, w) in enumerate(jobs)
    ]
    tiers = sorted({h.priority for h in held if not h.stopping}, reverse=True)
    sets = [c for k in range(len(held) + 1) for c in itertools.combinations(held, k)
            if sum(h.share_bytes or 0 for h in c) >= short]  # fmt: skip
    chosen = cheapest_victims(held, short)
    if not sets:
        assert chosen is None
        return
    assert chosen is not None and sum(h.share_bytes or 0 for h in chosen) >= short
    assert _brute_key(tuple(chosen), tiers) == min(_brute_key(c, tiers) for c in sets)


@st.composite
def shared_queues(draw: st.DrawFn) -> tuple[list[Dev], list[Holding], list[Waiting]]:
    devices: list[Dev] = []
    holding: list[Holding] = []
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["idle", "whole", "shared"]))
        flags = {
            "priority": draw(st.integers(-2, 2)),
            "preemptible": draw(st.booleans()),
        }
        if kind == "whole":
            holding.append(holder(100 + 10 * i, i, **flags))  # type: ignore[arg-type]
            devices.append(whole_dev(i, 100 + 10 * i))
        elif kind == "shared":
            mine = [
                sharer(100 + 10 * i + j, i, draw(st.integers(1, 30)) * GiB,
                       priority=draw(st.integers(-2, 2)), preemptible=draw(st.booleans()))
                for j in range(draw(st.integers(1, 3)))
            ]  # fmt: skip
            holding.extend(mine)
            devices.append(shared_dev(i, *mine))
        else:
            devices.append(shared_dev(i))
    waiting: list[Waiting] = []
    for j in range(1, draw(st.integers(2, 8))):
        priority = draw(st.integers(-2, 3))
        if draw(st.booleans()):
            waiting.append(sharing(j, draw(st.integers(1, 70)) * GiB, priority))
        else:
            waiting.append(exclusive(j, priority, draw(st.integers(1, 2))))
    return devices, holding, waiting


@settings(max_examples=300, deadline=None)
@given(shared_queues())
def test_only_preemptible_lower_jobs_are_stopped_each_once_and_both_passes_agree(
    case: tuple[list[Dev], list[Holding], list[Waiting]],
) -> None:
    devices, holding, waiting = case
    out = plan(devices, holding, waiting, now=NOW)
    held = {h.id: h for h in holding}
    priority = {w.id: w.priority for w in waiting}
    stopped = [v for v, _ in out.preempts]
    assert len(stopped) == len(set(stopped))
    for v, for_job in out.preempts:
        assert held[v].preemptible and held[v].priority < priority[for_job]
    fast = plan(devices, holding, waiting, now=NOW, explain=False)
    assert (fast.starts, fast.preempts) == (out.starts, out.preempts)
