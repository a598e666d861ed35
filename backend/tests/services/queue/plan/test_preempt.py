"""Preemption in the pure pass: a waiting job stops running preemptible jobs of lower priority
when their devices let it start, and only then (on its node, its named devices, or a count
spread over nodes placed by its own rule); the fewest victims; never twice. And the
scheduler's deciding-only pass (explain=False) decides exactly what the explained one does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpudeck.services.queue.plan import Dev, Holding, Policy, Waiting, plan

NOW = 1000.0


def _node(holders: dict[int, int]) -> list[Dev]:
    """Four devices of node `vm`; `holders` maps an index to the job holding it."""
    return [Dev("vm", f"u{i}", i, holder=holders.get(i)) for i in range(4)]


def _running(job_id: int, *indices: int, priority: int = 0, **flags: bool) -> Holding:
    keys = tuple(("vm", f"u{i}") for i in indices)
    return Holding(job_id, "ann", keys, NOW + 3600, priority=priority, **flags)


def _waiting(job_id: int, world_size: int, priority: int, **extra: object) -> Waiting:
    return Waiting(
        id=job_id,
        owner="bob",
        node="vm",
        world_size=world_size,
        time_limit_s=600,
        priority=priority,
        **{"submitted_at": NOW - 10, **extra},  # type: ignore[arg-type]
    )


def test_a_higher_priority_job_preempts_the_fewest_lower_priority_preemptible_jobs() -> None:
    holding = [
        _running(1, 0, preemptible=True),
        _running(2, 1, 2, preemptible=True),
        _running(3, 3),  # not preemptible
    ]
    out = plan(_node({0: 1, 1: 2, 2: 2, 3: 3}), holding, [_waiting(9, 2, priority=5)], now=NOW)
    assert out.preempts == [(2, 9)] and out.starts == []
    info = out.infos[9]
    assert info.reason_code == "preempting" and "job 2" in info.reason
    assert info.expected_start == NOW


def test_no_preemption_for_equal_priority_a_non_preemptible_holder_or_too_few_devices() -> None:
    devices = _node({0: 1, 1: 2, 2: 2, 3: 3})
    holding = [
        _running(1, 0, preemptible=True),
        _running(2, 1, 2, priority=5, preemptible=True),
        _running(3, 3),
    ]
    equal = plan(
        devices, holding, [_waiting(9, 1, priority=5), _waiting(8, 2, priority=0)], now=NOW
    )
    assert (1, 9) in equal.preempts and all(victim != 2 for victim, _ in equal.preempts)
    too_big = plan(devices, holding, [_waiting(7, 3, priority=3)], now=NOW)
    assert too_big.preempts == [] and too_big.infos[7].reason_code == "devices_busy"
    named = _waiting(6, 1, priority=9, requested=("u3",))
    assert plan(devices, holding, [named], now=NOW).preempts == []


def test_a_victim_already_stopping_is_not_preempted_again_and_its_devices_stay_claimed() -> None:
    holding = [_running(1, 0, 1, preemptible=True, stopping=True)]
    devices = _node({0: 1, 1: 1})
    high = _waiting(9, 4, priority=5)
    low = _waiting(10, 1, priority=0, submitted_at=NOW - 100)
    out = plan(devices, holding, [high, low], now=NOW)
    assert out.preempts == [] and out.starts == []  # devices 2 and 3 wait for job 9
    assert out.infos[9].reason_code == "preempting"
    assert out.infos[10].reason_code == "devices_busy"


def _two_nodes(holders: dict[str, int]) -> list[Dev]:
    """Nodes `a` and `b` of two devices each; `holders` maps a device ("a0") to its job."""
    return [Dev(n, f"{n}{i}", i, holder=holders.get(f"{n}{i}")) for n in "ab" for i in range(2)]


def _holds(job_id: int, *names: str, priority: int = 0, **flags: bool) -> Holding:
    keys = tuple((name[0], name) for name in names)
    return Holding(job_id, "ann", keys, NOW + 3600, priority=priority, **flags)


def _spread(job_id: int, world_size: int, node_counts: tuple[int, ...], priority: int) -> Waiting:
    return _waiting(job_id, world_size, priority, node_counts=node_counts)


def test_a_count_spread_over_nodes_preempts_a_lower_preemptible_job() -> None:
    """A plain count on a lab of several nodes is such a spread (nodes: 1): it stops what
    lets it start on one node, the node its own rule picks."""
    devices = _two_nodes({"a0": 1, "a1": 1, "b0": 2})
    holding = [_holds(1, "a0", "a1", preemptible=True), _holds(2, "b0")]
    out = plan(devices, holding, [_spread(9, 2, (1,), priority=5)], now=NOW)
    assert out.preempts == [(1, 9)] and out.starts == []
    assert out.infos[9].reason_code == "preempting" and "job 1" in out.infos[9].reason
    assert out.infos[9].expected_start == NOW
    # Across nodes: 2 x 2 needs node a whole beside the free node b.
    free_b = _two_nodes({"a0": 1, "a1": 1})
    across = plan(free_b, holding[:1], [_spread(9, 4, (2,), priority=5)], now=NOW)
    assert across.preempts == [(1, 9)]


def test_a_spread_stops_no_job_its_placement_does_without() -> None:
    """Job 1 is the cheapest victim, yet freeing it alone places nothing; with job 2 stopped
    the job fits on node a, where job 1 does not run: job 1 is spared."""
    devices = _two_nodes({"a0": 2, "b0": 1, "b1": 3})
    holding = [
        _holds(1, "b0", priority=-1, preemptible=True),
        _holds(2, "a0", preemptible=True),
        _holds(3, "b1"),
    ]
    out = plan(devices, holding, [_spread(9, 2, (1,), priority=5)], now=NOW)
    assert out.preempts == [(2, 9)]


def test_a_spread_preempts_no_equal_priority_or_unmarked_job_and_keeps_its_claim() -> None:
    devices = _two_nodes({"a0": 1, "a1": 1, "b0": 2, "b1": 2})
    equal = [_holds(1, "a0", "a1", priority=5, preemptible=True), _holds(2, "b0", "b1")]
    waits = plan(devices, equal, [_spread(9, 2, (1,), priority=5)], now=NOW)
    assert waits.preempts == [] and waits.infos[9].reason_code == "devices_busy"
    # Once claimed, the victim's devices are not offered to a lower job of the same pass.
    claimed = [_holds(1, "a0", "a1", preemptible=True), _holds(2, "b0", "b1")]
    high, low = _spread(9, 2, (1,), priority=5), _spread(10, 2, (1,), priority=3)
    out = plan(devices, claimed, [high, low], now=NOW)
    assert out.preempts == [(1, 9)] and out.infos[10].reason_code == "devices_busy"


@st.composite
def queues(draw: st.DrawFn) -> tuple[list[Dev], list[Holding], list[Waiting]]:
    devices, holding = [], []
    for node in ("a", "b"):
        for i in range(draw(st.integers(1, 6))):
            key = (node, f"{node}{i}")
            holder = None
            if draw(st.booleans()):
                holder = 100 + len(holding)
                holding.append(
                    Holding(
                        holder,
                        draw(st.sampled_from("xy")),
                        (key,),
                        NOW + draw(st.integers(1, 900)),
                        priority=draw(st.integers(-2, 2)),
                        preemptible=draw(st.booleans()),
                        stopping=draw(st.booleans()),
                    )
                )
            devices.append(Dev(node, key[1], i, holder=holder, online=draw(st.booleans())))
    waiting = []
    for i in range(1, draw(st.integers(1, 15))):
        # A count on a node, named devices across both nodes, or a count spread over nodes.
        shape = draw(st.sampled_from(["count", "count", "across", "spread"]))
        extra: dict[str, object] = {"world_size": draw(st.integers(1, 4))}
        if shape == "across":
            picked = draw(st.lists(st.sampled_from(devices), min_size=1, max_size=4, unique=True))
            picked.sort(key=lambda d: d.node)
            extra = {
                "world_size": len(picked),
                "requested": tuple(d.uuid for d in picked),
                "requested_nodes": tuple(d.node for d in picked),
            }
        elif shape == "spread":
            extra = {"world_size": 2, "node_counts": draw(st.sampled_from([(1,), (2,), (1, 2)]))}
        waiting.append(
            Waiting(
                id=i,
                owner=draw(st.sampled_from("xyz")),
                node=draw(st.sampled_from("ab")),
                submitted_at=float(draw(st.integers(0, 999))),
                time_limit_s=float(draw(st.integers(1, 900))),
                priority=draw(st.integers(-2, 2)),
                **extra,  # type: ignore[arg-type]
            )
        )
    return devices, holding, waiting


@settings(max_examples=200, deadline=None)
@given(queues(), st.booleans())
def test_the_deciding_only_pass_decides_what_the_explained_pass_does(
    queue: tuple[list[Dev], list[Holding], list[Waiting]], backfill: bool
) -> None:
    devices, holding, waiting = queue
    policy = Policy(backfill=backfill)
    full = plan(devices, holding, waiting, now=NOW, policy=policy)
    fast = plan(devices, holding, waiting, now=NOW, policy=policy, explain=False)
    assert (fast.starts, fast.cancels, fast.preempts) == (full.starts, full.cancels, full.preempts)
