"""The recommender's rules for sharing a device by memory (pure: candidates in, devices and
reasons out): what a job that asks to share may join, best fit on one node, and what a
whole-device recommendation says of devices that sharing jobs hold."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gpudeck.services.placement.packing import gib, may_join
from gpudeck.services.placement.recommend import Candidate, Recommendation, recommend
from gpudeck.services.placement.share_recommend import as_room

GiB = 1024**3
CONTEXT = GiB // 2


def device(index: int, room_gib: float | None, node: str = "a", **more: Any) -> Candidate:
    """A device of an 80 GiB card whose node allows sharing; `room_gib` its reservation room."""
    fields: dict[str, Any] = {
        "memory_free_bytes": 80 * GiB,
        "sample_age_s": 1.0,
        "node_shares_memory": True,
        "reservation_room_bytes": None if room_gib is None else int(room_gib * GiB),
    } | more
    return Candidate(node, f"{node}-{index}", index, "gpu", 80 * GiB, **fields)


def share(devices: list[Candidate], need_gib: float, count: int = 1, **more: Any) -> Recommendation:
    return recommend(
        devices,
        bytes_per_device=int(need_gib * GiB) - CONTEXT,
        count=count,
        share="memory",
        owner="ada",
        context_reserve_bytes=CONTEXT,
        **more,
    )


def placed(result: Recommendation) -> list[tuple[str, int]]:
    return [(d.node, d.index) for d in result.devices]


def test_a_share_takes_the_tightest_room_that_holds_it() -> None:
    devices = [device(0, 10), device(1, 3), device(2, 6), device(3, 2)]
    result = share(devices, 2.5)
    assert result.enough and result.could_share and placed(result) == [("a", 1)]
    assert result.share_bytes_per_device == int(2.5 * GiB)
    assert placed(share(devices, 2.5, count=2)) == [("a", 1), ("a", 2)]
    # the roomiest first when asked for memory: the tight ones stay for small shares
    assert placed(share(devices, 2.5, strategy="memory")) == [("a", 0)]
    (short,) = share(devices, 2.5).excluded
    assert short.reason == "insufficient_memory"
    assert short.message == "device a/3: 2.0 GiB free of reservations, needs 2.5 GiB"


def test_a_share_stays_on_one_node_and_says_how_many_fit_there() -> None:
    devices = [device(0, 10, node="a"), device(0, 10, node="b"), device(1, 1, node="b")]
    result = share(devices, 4, count=2)
    assert not result.enough and not result.could_share and result.share_devices == ()
    assert len(result.devices) == 1  # the most a node holds, shown
    assert result.message == "not enough devices: 1 of the 2 needed fit as a share on one node"
    # the tightest node wins when both hold it
    both = [*devices, device(1, 5, node="a"), device(2, 4, node="b")]
    assert placed(share(both, 4, count=2)) == [("b", 2), ("b", 0)]


def test_what_a_share_may_not_join_and_why() -> None:
    devices = [
        device(0, None, held_by_job_id=7),
        device(1, 20, external_process=True),
        device(2, None, node_shares_memory=False),
        device(3, 20, shared_by_job_ids=(3, 4), sharing_owners=frozenset({"bob"})),
        device(4, 20, shared_by_job_ids=(5,), sharing_owners=frozenset({"ada"})),
    ]
    result = share(devices, 4)
    assert placed(result) == [("a", 4)]  # ada's own share
    reasons = {e.index: (e.reason, e.message) for e in result.excluded}
    assert reasons == {
        0: ("held_by_job", "held whole by job 7"),
        1: ("external_process", "used by a process GPUDeck did not start"),
        2: ("sharing_not_allowed", "node a does not allow sharing devices"),
        3: (
            "sharing_not_allowed",
            "shared by jobs 3, 4 of another user; node a shares a device between one user's "
            "jobs only",
        ),
    }
    # a node that shares across users lets ada join bob's jobs
    across = [*devices[:3], device(3, 20, shared_by_job_ids=(3,), node_shares_across_users=True,
                                   sharing_owners=frozenset({"bob"}))]  # fmt: skip
    assert placed(share(across, 4)) == [("a", 3)]


def test_a_share_is_judged_by_its_reservation_not_by_live_free_memory() -> None:
    # no reading yet, and NVML's free memory lower than the room: the room decides, as the
    # scheduler's placement of a sharing job does (the trigger's rule)
    quiet = device(0, 10, memory_free_bytes=None, sample_age_s=None)
    busy = device(1, 10, memory_free_bytes=GiB)
    assert placed(share([quiet, busy], 4, count=2)) == [("a", 0), ("a", 1)]


def test_without_share_a_shared_device_says_whether_the_job_could_join_as_a_share() -> None:
    shared = device(
        0,
        5.1,
        shared_by_job_ids=(3, 4),
        sharing_owners=frozenset({"ada"}),
        memory_free_bytes=40 * GiB,
    )
    held = device(1, None, held_by_job_id=9)
    result = recommend([shared, held], bytes_per_device=4 * GiB, count=1, owner="ada",
                       context_reserve_bytes=CONTEXT)  # fmt: skip
    assert not result.enough and result.devices == ()
    assert [(e.index, e.reason, e.message) for e in result.excluded] == [
        (0, "shared", "shared by jobs 3, 4; a sharing job could reserve 5.1 GiB here"),
        (1, "held_by_job", "held by job 9"),
    ]
    assert result.could_share and [d.index for d in result.share_devices] == [0]
    assert result.share_message == (
        "could start now by sharing instead of waiting: a/0 (5.1 GiB free of reservations)"
    )
    # too big a share: the device still says what it has, and nothing offers sharing
    big = recommend([shared], bytes_per_device=5 * GiB, count=1, owner="ada",
                    context_reserve_bytes=CONTEXT)  # fmt: skip
    assert big.excluded[0].message == (
        "shared by jobs 3, 4; 5.1 GiB free of reservations, a share needs 5.5 GiB"
    )
    assert not big.could_share and big.share_message is None and big.share_devices == ()
    # another user's shares on a node that keeps users apart: no offer either
    bob = recommend([shared], bytes_per_device=GiB, count=1, owner="bob")
    assert bob.excluded[0].message == "shared by jobs 3, 4" and not bob.could_share


def test_an_idle_device_fits_whole_and_as_a_share_without_waiting() -> None:
    result = recommend([device(0, 75)], bytes_per_device=GiB, count=1, owner="ada")
    assert result.enough and result.could_share
    assert result.share_message == "could start now by sharing: a/0 (75.0 GiB free of reservations)"


rooms = st.lists(
    st.builds(
        lambda i, node, room, held, external, shares, owner: device(
            i,
            room if shares and not held and not external else None,
            node=node,
            held_by_job_id=7 if held else None,
            external_process=external,
            node_shares_memory=shares,
            shared_by_job_ids=(1,) if owner else (),
            sharing_owners=frozenset({owner}) if owner else frozenset(),
        ),
        st.integers(0, 7),
        st.sampled_from(["a", "b"]),
        st.floats(0, 76),
        st.booleans(),
        st.booleans(),
        st.booleans(),
        st.sampled_from([None, "ada", "bob"]),
    ),
    max_size=8,
    unique_by=lambda d: (d.node, d.index),
)


@given(rooms, st.floats(0.6, 40), st.integers(1, 4), st.sampled_from(["packed", "memory"]))
def test_a_share_only_ever_goes_where_it_may_join_and_fits(
    devices: list[Candidate], need_gib: float, count: int, strategy: Any
) -> None:
    result = share(devices, need_gib, count=count, strategy=strategy)
    need = result.share_bytes_per_device
    assert len({d.node for d in result.devices}) <= 1
    assert len(result.devices) <= count
    left_out = {(e.node, e.index) for e in result.excluded}
    assert left_out.isdisjoint(placed(result))
    # every device not left out (with its reason) could take the share
    for d in devices:
        if (d.node, d.index) not in left_out:
            assert may_join(as_room(d), "ada", d.node_shares_across_users)
            assert (d.reservation_room_bytes or 0) >= need
    assert result.could_share == result.enough
    short = [e for e in result.excluded if e.reason == "insufficient_memory"]
    assert all(f"needs {gib(need)}" in e.message for e in short)
