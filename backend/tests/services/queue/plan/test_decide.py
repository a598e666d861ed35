"""The pure scheduling pass (services.queue.plan), by property: whatever the cluster and queue,
a pass never double-books, never starts a partial gang, a held, blocked or over-quota job, never
delays the first waiting job's reservation by backfilling, and orders by priority, fair share,
age. Plus the worked example of docs/scheduler.md and a large job under a stream of small ones."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from gpudeck.services.queue.plan import Dev, Holding, Plan, Policy, Quota, Waiting, plan

NODES = ("a", "b")
NOW = 1000.0


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Dev], list[Holding], list[Waiting], dict[str, Quota]]:
    devices: list[Dev] = []
    holding: list[Holding] = []
    next_id = 1
    for node in NODES:
        online = draw(st.sampled_from([True, True, True, False]))  # its sampler reports
        for index in range(draw(st.integers(1, 6))):
            state = draw(st.sampled_from(["free", "free", "held", "external"]))
            holder = None
            if state == "held":
                holder = next_id
                holding.append(
                    Holding(
                        next_id,
                        draw(st.sampled_from("xyz")),
                        ((node, f"{node}{index}"),),
                        NOW + draw(st.integers(1, 500)),
                    )
                )
                next_id += 1
            devices.append(
                Dev(
                    node,
                    f"{node}{index}",
                    index,
                    holder=holder,
                    external=state == "external",
                    usable_bytes=draw(st.sampled_from([None, 10, 100])),
                    online=online,
                )
            )
    waiting: list[Waiting] = []
    for _ in range(draw(st.integers(0, 12))):
        node = draw(st.sampled_from(NODES))
        on_node = [d for d in devices if d.node == node]
        shape = draw(st.sampled_from(["named", "count", "across", "spread"]))
        requested: tuple[str, ...] | None = None
        requested_nodes: tuple[str, ...] | None = None
        node_counts: tuple[int, ...] | None = None
        if shape == "named":
            picked = draw(st.lists(st.sampled_from(on_node), min_size=1, unique=True, max_size=3))
            requested = tuple(d.uuid for d in picked)
            size = len(picked)
        elif shape == "across":  # named devices on both nodes, node by node
            picked = draw(st.lists(st.sampled_from(devices), min_size=2, unique=True, max_size=4))
            first = picked[0].node
            picked.sort(key=lambda d: d.node != first)
            node, size = first, len(picked)
            requested = tuple(d.uuid for d in picked)
            requested_nodes = tuple(d.node for d in picked)
        elif shape == "spread":  # 1 x size or 2 x size/2, or exactly one of them
            size = draw(st.sampled_from([1, 2, 4]))
            node_counts = draw(st.sampled_from([(1,), (1, 2), (2,)] if size > 1 else [(1,)]))
        else:
            size = draw(st.integers(1, max(1, len(on_node))))
        deps = draw(
            st.dictionaries(
                st.integers(1, 5), st.sampled_from(["succeeded", "running", "failed"]), max_size=2
            )
        )
        waiting.append(
            Waiting(
                id=next_id,
                owner=draw(st.sampled_from("xyz")),
                node=node,
                world_size=size,
                submitted_at=float(draw(st.integers(0, 999))),
                time_limit_s=float(draw(st.integers(1, 1000))),
                priority=draw(st.integers(-2, 2)),
                requested=requested,
                bytes_per_device=draw(st.sampled_from([None, 50])),
                held=draw(st.booleans()),
                dependencies=deps,
                requested_nodes=requested_nodes,
                node_counts=node_counts,
            )
        )
        next_id += 1
    quotas = {"x": Quota(max_devices=draw(st.integers(1, 4)))}
    return devices, holding, waiting, quotas


def _after(
    devices: list[Dev], holding: list[Holding], waiting: list[Waiting], out: Plan
) -> tuple[list[Dev], list[Holding], list[Waiting]]:
    """The cluster once the pass's starts are applied (for a second look)."""
    by_id = {w.id: w for w in waiting}
    taken = {d.key: s.job_id for s in out.starts for d in s.devices}
    new_devices = [replace(d, holder=taken.get(d.key, d.holder)) for d in devices]
    new_holding = [
        *holding,
        *(
            Holding(
                s.job_id,
                by_id[s.job_id].owner,
                tuple(d.key for d in s.devices),
                NOW + by_id[s.job_id].time_limit_s,
            )
            for s in out.starts
        ),
    ]
    started = {s.job_id for s in out.starts}
    return new_devices, new_holding, [w for w in waiting if w.id not in started]


@settings(max_examples=300, deadline=None)
@given(clusters(), st.booleans())
def test_a_pass_keeps_every_rule(
    cluster: tuple[list[Dev], list[Holding], list[Waiting], dict[str, Quota]], backfill: bool
) -> None:
    devices, holding, waiting, quotas = cluster
    policy = Policy(backfill=backfill)
    out = plan(devices, holding, waiting, now=NOW, quotas=quotas, policy=policy)
    by_id = {w.id: w for w in waiting}
    by_key = {d.key: d for d in devices}

    used = [d.key for s in out.starts for d in s.devices]
    assert len(used) == len(set(used)), "a device given twice"
    for start in out.starts:
        job = by_id[start.job_id]
        assert len(start.devices) == job.world_size  # the whole gang
        assert not job.held and all(s == "succeeded" for s in job.dependencies.values())
        for d in start.devices:
            assert by_key[d.key].holder is None and not by_key[d.key].external
            assert by_key[d.key].online, "a start on a node that does not report"
            assert d.usable_bytes is None or d.usable_bytes >= (job.bytes_per_device or 0)
        nodes = list(dict.fromkeys(d.node for d in start.devices))
        per_node = Counter(d.node for d in start.devices)
        ranks = [d.node for d in start.devices]
        assert ranks == sorted(ranks, key=nodes.index), "ranks not node by node"
        if job.requested is not None:
            assert tuple(d.key for d in start.devices) == job.wanted
        elif job.node_counts is not None:
            assert len(nodes) in job.node_counts
            assert set(per_node.values()) == {job.world_size // len(nodes)}
        else:
            assert nodes == [job.node]
    held_by = Counter[str]()
    for h in holding:
        held_by[h.owner] += len(h.devices)
    for s in out.starts:
        held_by[by_id[s.job_id].owner] += len(s.devices)
    x = quotas["x"].max_devices or 0
    started_x = [s for s in out.starts if by_id[s.job_id].owner == "x"]
    assert not started_x or held_by["x"] <= x

    cancelled = {job_id for job_id, _ in out.cancels}
    assert cancelled == {w.id for w in waiting if "failed" in w.dependencies.values()}
    started = {s.job_id for s in out.starts}
    assert set(out.infos) | cancelled | started == set(by_id)
    assert sorted(i.position for i in out.infos.values()) == list(range(1, len(out.infos) + 1))

    # Backfill never delays the first waiting job that could not start: its expected start is
    # the same once the started jobs are counted as holding their devices to their limits.
    blocked = [
        i
        for i in sorted(out.infos.items(), key=lambda kv: kv[1].position)
        if i[1].reason_code in ("devices_busy", "priority", "insufficient_memory")
    ]
    if blocked:
        first_id, first = blocked[0]
        again = plan(*_after(devices, holding, waiting, out), now=NOW, quotas=quotas, policy=policy)
        assert again.infos[first_id].expected_start == first.expected_start


def test_order_is_priority_then_fair_share_then_age() -> None:
    devices = [Dev("a", "a0", 0, holder=1)]
    holding = [Holding(1, "z", (("a", "a0"),), NOW + 100)]
    waiting = [
        Waiting(2, "heavy", "a", 1, submitted_at=1, time_limit_s=10),
        Waiting(3, "light", "a", 1, submitted_at=2, time_limit_s=10),
        Waiting(4, "heavy", "a", 1, submitted_at=3, time_limit_s=10, priority=1),
        Waiting(5, "light", "a", 1, submitted_at=0, time_limit_s=10),
    ]
    out = plan(devices, holding, waiting, now=NOW, usage={"heavy": 50.0, "light": 5.0})
    assert sorted(out.infos, key=lambda j: out.infos[j].position) == [4, 5, 3, 2]
    fifo = plan(devices, holding, waiting, now=NOW, policy=Policy(order="fifo"))
    assert sorted(fifo.infos, key=lambda j: fifo.infos[j].position) == [5, 2, 3, 4]
    # Expected starts follow the time limits: after the holder, then one after another.
    assert [out.infos[j].expected_start for j in (4, 5, 3, 2)] == [
        NOW + 100,
        NOW + 110,
        NOW + 120,
        NOW + 130,
    ]


def test_worked_example_of_the_docs() -> None:
    """docs/scheduler.md: 4 devices; job 1 holds 0-1 for 1 h. Job 2 wants all four; job 3 one
    device for 30 min backfills; job 4 one device for 2 h waits (it would delay job 2)."""
    devices = [Dev("vm", f"u{i}", i, holder=1 if i < 2 else None) for i in range(4)]
    holding = [Holding(1, "ann", (("vm", "u0"), ("vm", "u1")), NOW + 3600)]
    waiting = [
        Waiting(2, "bob", "vm", 4, submitted_at=1, time_limit_s=7200),
        Waiting(3, "cat", "vm", 1, submitted_at=2, time_limit_s=1800),
        Waiting(4, "dan", "vm", 1, submitted_at=3, time_limit_s=7200),
    ]
    out = plan(devices, holding, waiting, now=NOW)
    assert [s.job_id for s in out.starts] == [3]
    assert out.infos[2].reason_code == "devices_busy" and out.infos[2].position == 1
    assert out.infos[2].expected_start == NOW + 3600
    assert (
        out.infos[2].reason
        == "devices busy: needs 4 on vm, 2 free (vm/0 held by job 1, vm/1 held by job 1)"
    )
    assert out.infos[4].reason_code == "priority" and out.infos[4].position == 2
    assert out.infos[4].reason == "priority: its devices are reserved for job 2"
    no_backfill = plan(devices, holding, waiting, now=NOW, policy=Policy(backfill=False))
    assert no_backfill.starts == []


def test_a_large_job_is_not_starved_by_a_stream_of_small_ones() -> None:
    """Small one-device jobs keep arriving; the eight-device job starts no later than its first
    reservation (the end of the longest limit holding its devices when it arrived)."""
    devices = [Dev("n", f"u{i}", i) for i in range(8)]
    ends: dict[str, tuple[int, float]] = {}  # uuid -> (job, ends_at)
    clock, next_id, big_started = 0.0, 100, None
    big = Waiting(1, "big", "n", 8, submitted_at=5.0, time_limit_s=50)
    reservation = None
    for step in range(200):
        clock = step * 1.0
        ends = {u: je for u, je in ends.items() if je[1] > clock}
        waiting = [
            Waiting(next_id + k, "small", "n", 1, submitted_at=clock, time_limit_s=20)
            for k in range(2)
        ]
        next_id += 2
        if clock >= 5.0 and big_started is None:
            waiting.append(big)
        current = [
            Dev("n", d.uuid, d.index, holder=ends[d.uuid][0] if d.uuid in ends else None)
            for d in devices
        ]
        holding = [Holding(j, "small", (("n", u),), e) for u, (j, e) in ends.items()]
        out = plan(current, holding, waiting, now=clock, usage={"big": 0.0, "small": 1e9})
        if big.id in out.infos and reservation is None:
            reservation = out.infos[big.id].expected_start
        for s in out.starts:
            limit = 50 if s.job_id == big.id else 20
            for d in s.devices:
                ends[d.uuid] = (s.job_id, clock + limit)
            if s.job_id == big.id:
                big_started = clock
        if big_started is not None:
            break
    assert reservation is not None and big_started is not None
    assert big_started <= reservation
