"""The pure pass (services.queue.plan) for jobs across nodes: a count spread over nodes takes the
fewest nodes it allows, then the best fit; offline nodes are never used; named devices on
several nodes wait for exactly those, and a blocked job across nodes holds a reservation that
backfill respects like any other."""

from __future__ import annotations

from gpudeck.services.queue.plan import Dev, Holding, Waiting, choose_spread, plan

NOW = 1000.0


def cluster(free: dict[str, int], *, offline: tuple[str, ...] = (), held: int = 0) -> list[Dev]:
    """`free[node]` free devices on each node, plus `held` devices on each held by job 1."""
    return [
        Dev(node, f"{node}{i}", i, holder=1 if i >= n else None, online=node not in offline)
        for node, n in free.items()
        for i in range(n + held)
    ]


def spread(job_id: int, size: int, counts: tuple[int, ...], limit_s: float = 100.0) -> Waiting:
    return Waiting(
        id=job_id,
        owner="u",
        node="a",
        world_size=size,
        submitted_at=float(job_id),
        time_limit_s=limit_s,
        node_counts=counts,
    )


def nodes_of(devices: list[Dev] | None) -> list[str]:
    return [d.node for d in devices or []]


def test_the_fewest_nodes_first_then_the_best_fit() -> None:
    assert nodes_of(choose_spread(cluster({"a": 4, "b": 2, "c": 2}), 4, (1, 2))) == ["a"] * 4
    # No node holds 4: two nodes of 2, those with the fewest free devices that suffice (b and
    # c), keeping a's 3 for a larger job.
    two = nodes_of(choose_spread(cluster({"a": 3, "b": 2, "c": 2}), 4, (1, 2)))
    assert two == ["b", "b", "c", "c"]
    # devices_per_node 2: exactly two nodes, even though a could hold it alone.
    assert nodes_of(choose_spread(cluster({"a": 4, "b": 2}), 4, (2,))) == ["b", "b", "a", "a"]
    assert choose_spread(cluster({"a": 1, "b": 1, "c": 3}), 4, (1, 2)) is None


def test_offline_nodes_are_never_chosen() -> None:
    devices = cluster({"a": 4, "b": 2, "c": 2}, offline=("a",))
    assert nodes_of(choose_spread(devices, 4, (1, 2))) == ["b", "b", "c", "c"]
    out = plan(devices, [], [spread(10, 4, (1,))], now=NOW)
    assert out.starts == [] and out.infos[10].reason_code == "devices_busy"
    assert "free now: b 2, c 2" in out.infos[10].reason


def test_named_devices_on_several_nodes_wait_for_exactly_those() -> None:
    devices = cluster({"a": 1, "b": 1}, held=1)  # a0, b0 free; a1, b1 held by job 1
    holding = [Holding(1, "x", (("a", "a1"), ("b", "b1")), NOW + 50)]
    job = Waiting(
        id=10,
        owner="u",
        node="a",
        world_size=2,
        submitted_at=0.0,
        time_limit_s=100.0,
        requested=("a0", "b1"),
        requested_nodes=("a", "b"),
    )
    out = plan(devices, holding, [job], now=NOW)
    assert out.starts == []
    info = out.infos[10]
    assert info.reason == "devices busy: b/1 held by job 1"
    assert info.expected_start == NOW + 50
    free = [Dev(d.node, d.uuid, d.index) for d in devices]
    started = plan(free, [], [job], now=NOW).starts
    assert [d.key for d in started[0].devices] == [("a", "a0"), ("b", "b1")]


def test_a_blocked_job_across_nodes_keeps_its_reservation_from_backfill() -> None:
    """Job 10 (2 x 2) waits for b and c, free at +50; a small job that would hold one of
    those devices past +50 waits, one that can use another device starts now."""
    devices = [
        *cluster({"a": 1}),
        *(Dev(n, f"{n}{i}", i, holder=1) for n in "bc" for i in range(2)),
        Dev("b", "b2", 2),
    ]
    holding = [Holding(1, "x", tuple((n, f"{n}{i}") for n in "bc" for i in range(2)), NOW + 50)]
    big = spread(10, 4, (2,))
    late = spread(11, 1, (1,), limit_s=500.0)
    out = plan(devices, holding, [big, late], now=NOW)
    assert out.infos[10].expected_start == NOW + 50
    # The small one takes a0 (outside the reservation) rather than b2.
    assert [d.key for s in out.starts for d in s.devices] == [("a", "a0")]
    busy_a = [*devices[1:], Dev("a", "a0", 0, holder=2)]
    out = plan(busy_a, [*holding, Holding(2, "y", (("a", "a0"),), NOW + 1e4)], [big, late], now=NOW)
    # Only b2 is free, and it is in job 10's reservation: the small job would delay it.
    assert out.starts == []
    assert out.infos[11].reason == "priority: its devices are reserved for job 10"
