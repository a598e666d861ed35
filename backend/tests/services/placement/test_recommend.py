"""Properties of the device recommender (pure: candidates in, devices and reasons out), and of
the one usable-memory rule (`usable_of`, `usable_when_idle`) every memory check reads."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudeck.models import Device
from gpudeck.services.errors import InvalidInput
from gpudeck.services.placement import fit, live_memory
from gpudeck.services.placement.recommend import (
    Candidate,
    MiB,
    default_safety_margin,
    exclusion,
    recommend,
    usable_bytes,
    usable_of,
    usable_when_idle,
)
from gpudeck.services.submit import placement_request

GiB = 1024**3
STALE_AFTER_S = 10.0


@st.composite
def candidates(draw: st.DrawFn) -> list[Candidate]:
    n = draw(st.integers(min_value=0, max_value=10))
    devices = []
    for i in range(n):
        total = draw(st.sampled_from([16, 24, 40, 80, 141])) * GiB
        devices.append(
            Candidate(
                node=draw(st.sampled_from(["a", "b", "c"])),
                uuid=f"GPU-{i}",
                index=i,
                name="gpu",
                memory_total_bytes=total,
                memory_free_bytes=draw(st.none() | st.integers(0, total)),
                held_by_job_id=draw(st.none() | st.none() | st.integers(1, 5)),
                external_process=draw(st.booleans() | st.just(False)),
                sample_age_s=draw(st.none() | st.floats(0, 30, allow_nan=False)),
            )
        )
    return devices


requests = st.fixed_dictionaries(
    {
        "bytes_per_device": st.integers(0, 100 * GiB),
        "count": st.integers(1, 6),
        "strategy": st.sampled_from(["packed", "spread", "memory"]),
        "node": st.none() | st.sampled_from(["a", "b"]),
    }
)


def fits(device: Candidate, request: dict) -> bool:
    return (
        (request["node"] is None or device.node == request["node"])
        and device.held_by_job_id is None
        and not device.external_process
        and device.memory_free_bytes is not None
        and device.sample_age_s is not None
        and device.sample_age_s <= STALE_AFTER_S
        and usable_bytes(device) >= request["bytes_per_device"]
    )


@settings(max_examples=300, deadline=None)
@given(candidates(), requests)
def test_never_recommends_a_busy_stale_or_small_device(
    devices: list[Candidate], request: dict
) -> None:
    result = recommend(devices, **request, stale_after_s=STALE_AFTER_S)
    assert all(fits(d, request) for d in result.devices)
    assert len({d.uuid for d in result.devices}) == len(result.devices)
    eligible = [d for d in devices if fits(d, request)]
    assert len(result.devices) == min(request["count"], len(eligible))
    assert result.enough == (len(eligible) >= request["count"])
    # Every device that cannot take a rank is named with its reason; no chosen one is.
    excluded = {e.uuid for e in result.excluded}
    assert excluded == {d.uuid for d in devices if not fits(d, request)}


@settings(max_examples=300, deadline=None)
@given(candidates(), requests, st.randoms(use_true_random=False))
def test_same_inputs_same_answer(devices: list[Candidate], request: dict, rng) -> None:
    first = recommend(devices, **request)
    shuffled = list(devices)
    rng.shuffle(shuffled)
    assert recommend(shuffled, **request) == first == recommend(devices, **request)


@settings(max_examples=300, deadline=None)
@given(candidates(), requests)
def test_packed_uses_the_fewest_nodes_and_the_tightest_devices(
    devices: list[Candidate], request: dict
) -> None:
    request = {**request, "strategy": "packed"}
    result = recommend(devices, **request, stale_after_s=STALE_AFTER_S)
    if not result.enough:
        return
    eligible = [d for d in devices if fits(d, request)]
    nodes_used = len({d.node for d in result.devices})
    assert nodes_used == _fewest_nodes(eligible, request["count"])
    if nodes_used == 1:  # best fit: no unchosen device on any node is tighter and still enough
        chosen = sorted(usable_bytes(d) for d in result.devices)
        for node in {d.node for d in eligible}:
            here = sorted(usable_bytes(d) for d in eligible if d.node == node)
            if len(here) >= request["count"]:
                assert sum(chosen) <= sum(here[: request["count"]])


def _fewest_nodes(eligible: list[Candidate], count: int) -> int:
    sizes = {}
    for d in eligible:
        sizes[d.node] = sizes.get(d.node, 0) + 1
    for k in range(1, len(sizes) + 1):
        if any(sum(c) >= count for c in combinations(sizes.values(), k)):
            return k
    raise AssertionError("unreachable when enough devices fit")


@settings(max_examples=200, deadline=None)
@given(candidates(), requests)
def test_memory_takes_the_roomiest(devices: list[Candidate], request: dict) -> None:
    request = {**request, "strategy": "memory"}
    result = recommend(devices, **request, stale_after_s=STALE_AFTER_S)
    chosen = {d.uuid for d in result.devices}
    rest = [usable_bytes(d) for d in devices if fits(d, request) and d.uuid not in chosen]
    assert all(usable_bytes(d) >= max(rest, default=0) for d in result.devices)


def test_spread_alternates_nodes() -> None:
    devices = [_ready("a", 0), _ready("a", 1), _ready("b", 2), _ready("b", 3)]
    result = recommend(devices, bytes_per_device=GiB, count=2, strategy="spread")
    assert {d.node for d in result.devices} == {"a", "b"}


def test_reasons_name_the_holder_and_the_numbers() -> None:
    held = Candidate("a", "GPU-h", 0, "gpu", 80 * GiB, 70 * GiB, held_by_job_id=7, sample_age_s=1)
    small = _ready("a", 1, free=2 * GiB)
    stale = Candidate("a", "GPU-s", 2, "gpu", 80 * GiB, 70 * GiB, sample_age_s=99)
    result = recommend([held, small, stale], bytes_per_device=4 * GiB, count=1)
    reasons = {e.uuid: e for e in result.excluded}
    assert reasons["GPU-h"].reason == "held_by_job" and "job 7" in reasons["GPU-h"].message
    assert reasons["GPU-1"].reason == "insufficient_memory" and "MiB" in reasons["GPU-1"].message
    assert reasons["GPU-s"].reason == "stale_telemetry"
    assert not result.enough and "not enough devices" in result.message


def test_packed_keeps_the_large_device_whole() -> None:
    big, small = _ready("a", 0, free=140 * GiB), _ready("a", 1, free=20 * GiB)
    result = recommend([big, small], bytes_per_device=10 * GiB, count=1, strategy="packed")
    assert result.devices == (small,)
    assert default_safety_margin(80 * GiB) == 4 * GiB


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 200 * GiB).flatmap(lambda t: st.tuples(st.just(t), st.integers(0, t))))
def test_every_memory_check_reads_the_one_usable_memory_rule(sizes: tuple[int, int]) -> None:
    """Free memory less a margin of 512 MiB or 5 % of the device, whichever is larger: the
    recommender, a submit's live check (live_memory), the pass's snapshot (live_memory.usable),
    what can never fit a node (fit) and a submit's idle room (placement_request) agree on it."""
    total, free = sizes
    margin = free - usable_of(free, total)
    assert margin == max(512 * MiB, total // 20) == default_safety_margin(total)
    assert usable_when_idle(total) == usable_of(total, total)
    assert usable_bytes(Candidate("a", "GPU-0", 0, "gpu", total, free)) == usable_of(free, total)
    live = live_memory.LiveMemory("a", 0, total, free)
    assert live_memory.usable(live) == usable_of(free, total)
    device = Device(node="a", uuid="GPU-0", index=0, name="gpu", memory_total_bytes=total)
    assert placement_request._usable(device) == usable_when_idle(total)
    room = usable_when_idle(total)
    if room >= 0:  # a device smaller than its margin gives nothing, even idle
        fit.check_fits([device], room, "config")
    with pytest.raises(InvalidInput):
        fit.check_fits([device], room + 1, "config")
    # The live check and the recommender draw the line at the same byte.
    need = usable_of(free, total)
    assert live_memory.short_devices([("a", "GPU-0")], need, {("a", "GPU-0"): live}) == []
    assert live_memory.short_devices([("a", "GPU-0")], need + 1, {("a", "GPU-0"): live})
    fresh = Candidate("a", "GPU-0", 0, "gpu", total, free, sample_age_s=0.0)
    rule = {"node": None, "safety_margin_bytes": None, "stale_after_s": STALE_AFTER_S}
    assert exclusion(fresh, bytes_per_device=need, **rule) is None
    assert exclusion(fresh, bytes_per_device=need + 1, **rule) is not None


def _ready(node: str, index: int, *, free: int = 60 * GiB) -> Candidate:
    return Candidate(node, f"GPU-{index}", index, "gpu", 80 * GiB, free, sample_age_s=1.0)
