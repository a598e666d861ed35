"""The pass packs jobs that share by memory (plan/sharing.py): best fit by reservation room,
never beside a job holding a device whole (nor the reverse), never past a device's usable
memory, the same user's jobs only unless the node allows more, and a waiting sharing job names
the memory it is short of."""

from __future__ import annotations

from collections import Counter, defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from gpudeck.services.queue.plan import Dev, Holding, Plan, Waiting, plan

GiB = 1024**3
NOW = 1000.0
CAPACITY = 76 * GiB  # an 80 GiB device less its margin


def dev(
    index: int, *, holder: int | None = None, shared: int = 0, whole: bool = False, **kw: object
) -> Dev:
    return Dev(
        "n",
        f"u{index}",
        index,
        holder=holder,
        capacity_bytes=CAPACITY,
        shared_bytes=shared,
        share_owners=frozenset({"ada"}) if shared else frozenset(),
        whole=whole,
        shareable=True,
        **kw,  # type: ignore[arg-type]
    )


def sharing(job_id: int, need: int, owner: str = "ada", **kw: object) -> Waiting:
    fields: dict[str, object] = {"time_limit_s": 3600.0, **kw}
    return Waiting(job_id, owner, "n", 1, float(job_id), share_bytes=need, **fields)  # type: ignore[arg-type]


def placed(out: Plan) -> dict[int, list[int]]:
    return {s.job_id: [d.index for d in s.devices] for s in out.starts}


def test_eight_small_members_pack_four_a_device_and_two_without_share() -> None:
    devices = [dev(0), dev(1)]
    members = [sharing(i, 18 * GiB, sweep=1, sweep_max_parallel=8) for i in range(1, 9)]
    per_device = Counter(
        i for ix in placed(plan(devices, [], members, now=NOW)).values() for i in ix
    )
    assert per_device == {0: 4, 1: 4}
    capped = [sharing(i, 18 * GiB, sweep=1, sweep_max_parallel=3) for i in range(1, 9)]
    assert len(plan(devices, [], capped, now=NOW).starts) == 3
    whole = [
        Waiting(i, "ada", "n", 1, float(i), 3600.0, bytes_per_device=18 * GiB) for i in range(1, 9)
    ]
    assert len(plan(devices, [], whole, now=NOW).starts) == 2


def test_best_fit_takes_the_fullest_device_that_holds_it() -> None:
    holding = [Holding(50, "ada", (("n", "u1"),), NOW + 60)]
    devices = [dev(0), dev(1, holder=50, shared=60 * GiB), dev(2, holder=None)]
    out = plan(devices, holding, [sharing(1, 10 * GiB), sharing(2, 10 * GiB)], now=NOW)
    # 16 GiB left on device 1 holds the first; the second goes to an idle one (6 GiB left).
    assert placed(out) == {1: [1], 2: [0]}


def test_exclusive_and_shared_never_meet() -> None:
    holding = [
        Holding(50, "ada", (("n", "u0"),), NOW + 60),
        Holding(51, "ada", (("n", "u1"),), NOW + 60),
    ]
    devices = [dev(0, holder=50, shared=70 * GiB), dev(1, holder=51, whole=True)]
    exclusive = Waiting(2, "ada", "n", 1, 2.0, 3600.0)
    out = plan(devices, holding, [sharing(1, 4 * GiB + GiB // 2), exclusive], now=NOW)
    assert placed(out) == {1: [0]}  # beside the sharing job, not the whole-device one
    assert out.infos[2].reason_code == "devices_busy"
    # The whole job first: it holds EASY's reservation of device 0, which a long sharing job
    # would delay, so that one waits too (backfill treats a share like any use).
    first = Waiting(1, "ada", "n", 1, 1.0, 3600.0)
    out = plan(devices, holding, [first, sharing(2, GiB, time_limit_s=3600.0)], now=NOW)
    assert out.starts == [] and out.infos[2].reason_code == "priority"
    # And in one pass: a sharing job placed on an idle device closes it to a whole job.
    out = plan([dev(0)], [], [sharing(1, GiB), Waiting(2, "ada", "n", 1, 2.0, 3600.0)], now=NOW)
    assert placed(out) == {1: [0]} and out.infos[2].reason_code == "devices_busy"


def test_a_share_short_of_room_says_how_short() -> None:
    holding = [Holding(50, "ada", (("n", "u0"),), NOW + 60)]
    devices = [dev(0, holder=50, shared=CAPACITY - 3 * GiB)]
    out = plan(devices, holding, [sharing(2, 4 * GiB + GiB // 5)], now=NOW)
    assert out.infos[2].reason == (
        "insufficient memory: device n/0: 3.0 GiB free of reservations, needs 4.2 GiB"
    )
    assert out.infos[2].expected_start == NOW + 60  # its neighbour's end frees the room


def test_other_users_share_only_where_the_node_lets_them() -> None:
    holding = [Holding(50, "ada", (("n", "u0"),), NOW + 60)]
    devices = [dev(0, holder=50, shared=10 * GiB)]
    assert plan(devices, holding, [sharing(2, GiB, owner="bob")], now=NOW).starts == []
    open_to_all = [dev(0, holder=50, shared=10 * GiB, share_across_users=True)]
    assert placed(plan(open_to_all, holding, [sharing(2, GiB, owner="bob")], now=NOW)) == {2: [0]}


def test_a_node_that_does_not_allow_sharing_takes_no_sharing_job() -> None:
    devices = [Dev("n", "u0", 0, capacity_bytes=CAPACITY, shareable=False)]
    out = plan(devices, [], [sharing(1, GiB)], now=NOW)
    assert out.starts == [] and "does not allow sharing" in out.infos[1].reason


@st.composite
def mixed(draw: st.DrawFn) -> tuple[list[Dev], list[Holding], list[Waiting]]:
    devices: list[Dev] = []
    holding: list[Holding] = []
    for i in range(draw(st.integers(1, 4))):
        state = draw(st.sampled_from(["idle", "whole", "shared"]))
        shared = draw(st.integers(1, 76)) * GiB if state == "shared" else 0
        holder = 100 + i if state != "idle" else None
        if holder is not None:
            holding.append(Holding(holder, "ada", (("n", f"u{i}"),), NOW + 100))
        devices.append(dev(i, holder=holder, shared=shared, whole=state == "whole"))
    waiting = []
    for j in range(1, draw(st.integers(1, 12))):
        if draw(st.booleans()):
            waiting.append(sharing(j, draw(st.integers(1, 40)) * GiB))
        else:
            waiting.append(Waiting(j, "ada", "n", draw(st.integers(1, 2)), float(j), 60.0))
    return devices, holding, waiting


@settings(max_examples=300, deadline=None)
@given(mixed())
def test_no_pass_mixes_whole_and_shared_or_overfills_a_device(
    case: tuple[list[Dev], list[Holding], list[Waiting]],
) -> None:
    devices, holding, waiting = case
    out = plan(devices, holding, waiting, now=NOW)
    need = {w.id: w.share_bytes for w in waiting}
    shared: dict[int, int] = {d.index: d.shared_bytes for d in devices}
    whole: dict[int, int] = {d.index: int(d.whole) for d in devices}
    sharers: dict[int, int] = defaultdict(int, {d.index: int(d.shared_bytes > 0) for d in devices})
    for s in out.starts:
        for d in s.devices:
            if need[s.job_id] is None:
                whole[d.index] += 1
            else:
                shared[d.index] += int(need[s.job_id] or 0)
                sharers[d.index] += 1
    for d in devices:
        assert whole[d.index] <= 1
        assert not (whole[d.index] and sharers[d.index])
        assert shared[d.index] <= CAPACITY
