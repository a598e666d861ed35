"""Where a request may run (services/submit/placement_request.py), resolved once: named devices
ranked node by node, a count on its node or spread over the online nodes, what is refused
whatever the config (unknown, repeated or offline devices, a count past its node, a node left
to guess), and then what its estimate can never fit even on idle devices."""

from __future__ import annotations

import os
from typing import Any

import pytest
from harness import TEST_NODE, register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.cluster.nodes import NodeOffline
from gpudeck.services.errors import Conflict, InvalidInput, NotEnoughDevices, UnknownDevice
from gpudeck.services.placement.live_memory import InsufficientMemory
from gpudeck.services.placement.recommend import usable_when_idle
from gpudeck.services.submit.checks import InsufficientHostMemory
from gpudeck.services.submit.placement_request import resolve

GIB = 1024**3


def _spec(**fields: Any) -> JobCreate:
    return JobCreate.model_validate({"kind": "sae", "config": {}, **fields})


def _named(*refs: tuple[str, int]) -> JobCreate:
    return _spec(devices=[{"node": node, "index": index} for node, index in refs])


@pytest.fixture
def mixed(db: Session) -> None:
    """Two nodes of two devices: alpha's of 4 GiB, beta's of 1 GiB. Small, so the ranks of
    simulated devices fit in any test machine's memory (home_node checks that too)."""
    register_devices(db, "2x4GiB", node="alpha")
    register_devices(db, "2x1GiB", node="beta")


def _silence(db: Session, node: str) -> None:
    db.execute(
        text("UPDATE nodes SET last_seen_at = now() - interval '5 minutes' WHERE name = :n"),
        {"n": node},
    )
    db.commit()


def test_named_devices_rank_node_by_node_from_the_first_node_named(
    db: Session, mixed: None
) -> None:
    placement = resolve(db, _named(("beta", 1), ("alpha", 0), ("beta", 0)))
    # torchrun's layout: each node's ranks contiguous, the request's order within a node.
    assert [(d.node, d.index) for d in placement.named] == [("beta", 1), ("beta", 0), ("alpha", 0)]
    assert placement.node == "beta" and placement.nodes == ["beta", "alpha"]
    assert {(d.node, d.index) for d in placement.inventory} == {
        ("beta", 0),
        ("beta", 1),
        ("alpha", 0),
    }
    assert placement.spread is None and placement.field == "devices"


def test_an_unknown_or_repeated_device_is_refused_by_its_position(
    db: Session, devices: str
) -> None:
    with pytest.raises(UnknownDevice) as unknown:
        resolve(db, _spec(devices=[{"index": 0}, {"index": 8}]))
    assert unknown.value.field == "devices.1" and "index 8" in unknown.value.message
    with pytest.raises(UnknownDevice):
        resolve(db, _spec(devices=[{"uuid": "GPU-nobody", "node": TEST_NODE}]))
    with pytest.raises(InvalidInput) as twice:
        resolve(db, _spec(devices=[{"index": 3}, {"index": 3}]))
    assert twice.value.field == "devices.1" and "listed twice" in twice.value.message
    # The same device by index and by uuid is the same device.
    first = resolve(db, _spec(devices=[{"index": 2}])).named[0]
    with pytest.raises(InvalidInput, match="listed twice"):
        resolve(db, _spec(devices=[{"index": 2}, {"uuid": first.uuid}]))


def test_a_count_runs_on_the_one_node_or_any_node_with_room(db: Session, devices: str) -> None:
    one = resolve(db, _spec(count=2))
    assert (one.node, one.spread, one.field) == (TEST_NODE, None, "count")
    assert len(one.inventory) == 8
    register_devices(db, "2x80GiB", node="other")
    anywhere = resolve(db, _spec(count=2))  # several nodes, none named: one node, any one
    assert (anywhere.spread, anywhere.spread_nodes) == ((1,), 1)
    assert {d.node for d in anywhere.inventory} == {TEST_NODE, "other"}
    with pytest.raises(InvalidInput) as unnamed:  # named devices must say their node
        resolve(db, _spec(devices=[{"index": 0}]))
    assert unnamed.value.field == "node" and "name one" in unnamed.value.message


def test_a_count_past_its_node_or_on_no_node_is_refused(db: Session) -> None:
    with pytest.raises(InvalidInput, match="no node has registered any devices"):
        resolve(db, _spec(count=1))
    register_devices(db, "2x80GiB")
    with pytest.raises(InvalidInput) as past:
        resolve(db, _spec(count=3))
    assert past.value.field == "count" and "has 2 devices; 3 requested" in past.value.message
    with pytest.raises(InvalidInput) as spread_on_node:
        resolve(db, _spec(count=2, nodes=2, node=TEST_NODE))
    assert spread_on_node.value.field == "node"


def test_offline_nodes_are_refused_by_name_and_left_out_of_a_spread(
    db: Session, mixed: None
) -> None:
    _silence(db, "beta")
    with pytest.raises(NodeOffline) as named:
        resolve(db, _named(("alpha", 0), ("beta", 0)))
    assert named.value.field == "devices" and named.value.extra["nodes"] == ["beta"]
    with pytest.raises(NodeOffline) as count:
        resolve(db, _spec(count=1, node="beta"))
    assert count.value.field == "count"
    spread = resolve(db, _spec(count=2, nodes=2))
    assert {d.node for d in spread.inventory} == {"alpha"}


def test_named_devices_too_small_even_idle_are_refused_unless_forced(
    db: Session, mixed: None
) -> None:
    spec = _named(("alpha", 0), ("beta", 0))
    placement = resolve(db, spec)
    estimate = 2 * GIB  # fits alpha's 4 GiB, never beta's 1
    with pytest.raises(InsufficientMemory) as small:
        placement.home_node(spec, estimate)
    (short,) = small.value.extra["devices"]
    assert (short["node"], short["index"]) == ("beta", 0)
    assert short["usable_bytes"] == usable_when_idle(GIB) < estimate
    assert placement.home_node(spec, GIB // 4) == "alpha"
    forced = spec.model_copy(update={"force": True})
    assert placement.home_node(forced, estimate) == "alpha"  # force: it may wait for room
    with pytest.raises(InvalidInput) as never:  # past the largest device named
        placement.home_node(spec, 5 * GIB)
    assert never.value.field == "config" and "does not fit" in never.value.message


def test_a_count_on_a_node_needs_that_many_devices_that_hold_its_estimate(
    db: Session, devices: str
) -> None:
    # A mixed node: one device of 80 GiB, the other seven of 1 GiB.
    db.execute(text("UPDATE devices SET memory_total_bytes = :b WHERE index > 0"), {"b": GIB})
    db.commit()
    spec = _spec(count=2)
    placement = resolve(db, spec)
    assert placement.home_node(spec, GIB // 4) == TEST_NODE
    with pytest.raises(NotEnoughDevices) as few:
        placement.home_node(spec, 2 * GIB)
    assert few.value.extra == {"requested": 2, "free": 1, "lacking_memory": 0}


def test_a_spread_count_goes_where_it_would_on_an_idle_cluster_or_is_refused(
    db: Session, mixed: None
) -> None:
    spec = _spec(count=2, nodes=2)
    placement = resolve(db, spec)
    assert placement.node == ""  # unknown until its estimate is judged
    assert placement.home_node(spec, 2 * GIB) == "alpha"  # one node, the one that holds it
    four = _spec(count=4, nodes=2)
    with pytest.raises(Conflict) as never:
        resolve(db, four).home_node(four, 2 * GIB)  # 2 x 2 needs beta's, which are too small
    assert (never.value.code, never.value.field) == ("not_enough_devices", "count")
    assert never.value.extra == {"count": 4, "node_counts": [1, 2]}
    assert "1 x 4 or 2 x 2" in never.value.message
    assert "(devices per online node: alpha 2, beta 2)" in never.value.message
    # An estimate both nodes hold: 2 x 2, so not refused; its node is one of the two.
    assert resolve(db, four).home_node(four, GIB // 4) in {"alpha", "beta"}


def test_ranks_on_simulated_devices_must_fit_this_machine_even_forced(
    db: Session, devices: str
) -> None:
    host_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    spec = _spec(count=2, force=True)
    placement = resolve(db, spec)
    # Force skips what the devices can hold, not what the CPU processes of the ranks need.
    with pytest.raises(InsufficientHostMemory) as host:
        placement.home_node(spec, host_bytes // 2 + GIB)
    assert host.value.field == "count"
    assert placement.home_node(spec, GIB) == TEST_NODE
