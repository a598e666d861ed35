"""services/queue/summary.py: where a new job stands the moment it is submitted, from the
scheduler's last pass left in Redis rather than a pass of its own. The summary holds how many
jobs wait ahead by priority and usage and when each device is next free; it is published and
read back whole, and not read when stale or when Redis is down (the caller runs a pass). A new
job's place: held and dependent jobs say so; a count, named devices and a count spread over
nodes are told when their devices free and how many are free now; a device taken since the
pass is named with its holder (held_now, read in the submit's transaction)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
import redis
from harness import free_port, make_job
from redis.backoff import NoBackoff
from redis.retry import Retry
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from gpudeck.models import Device, Job, JobStatus
from gpudeck.services.queue import summary as queue_summary
from gpudeck.services.queue.summary import HeldNow, Summary, place_of

DAY_S = 86400
T = 1_800_000_000.0  # the summary's pass, on the wall clock


def _job(**fields: object) -> Job:
    """A new job as the submit has it (not yet in the database): one device on node n1."""
    values: dict[str, object] = {
        "owner": "alice",
        "priority": 0,
        "held": False,
        "depends_on": [],
        "node": "n1",
        "world_size": 1,
        "requested_devices": None,
        "requested_nodes": None,
        "spread_nodes": None,
        "devices_per_node": None,
    }
    return Job(**{**values, **fields})


def _summary(free_at: dict[str, dict[str, float | None]]) -> Summary:
    # Waiting ahead: 2 jobs of priority 1, 3 of priority 0 whose owner used 10 device-seconds,
    # 4 of priority 0 whose owner used 50.
    return Summary(T, {"alice": 20.0}, [(1, 0.0, 2), (0, 10.0, 3), (0, 50.0, 4)], free_at)


def test_a_summary_is_published_and_read_back_whole_while_fresh(
    redis_client: redis.Redis,
) -> None:
    fresh = Summary(time.time(), {"alice": 1.5}, [(0, 1.5, 2)], {"n1": {"u0": 3.0, "u1": None}})
    queue_summary.publish(redis_client, fresh)
    assert queue_summary.read(redis_client) == fresh
    stale = Summary(time.time() - queue_summary.MAX_AGE_S - 1, {}, [], {})
    queue_summary.publish(redis_client, stale)
    assert queue_summary.read(redis_client) is None  # the scheduler is gone or stuck
    redis_client.delete(queue_summary.SUMMARY_KEY)
    assert queue_summary.read(redis_client) is None


def test_with_redis_down_there_is_no_summary_and_no_error() -> None:
    # No retries: redis-py's default backs off three times before it gives up.
    down = redis.Redis(port=free_port(), socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0))
    assert queue_summary.read(down) is None


def test_a_new_job_is_placed_after_the_higher_and_the_less_used_ahead_of_it() -> None:
    summary = _summary({"n1": {"u0": T - 5}})  # one device, free at the pass
    place = place_of(summary, _job())
    # Ahead: priority 1 (2) and its own priority with usage at most alice's 20 (3), not 4.
    assert place.position == 6
    assert place.reason_code == "priority"
    assert place.reason == "priority: 5 jobs ahead of it in the queue"
    assert place.expected_start_at == datetime.fromtimestamp(T - 5, UTC)
    assert place_of(summary, _job(priority=1)).position == 3  # only its own priority's 2 ahead


def test_a_held_or_dependent_job_says_so_with_no_expected_start() -> None:
    summary = _summary({"n1": {"u0": T}})
    held = place_of(summary, _job(held=True))
    assert (held.reason_code, held.position, held.expected_start_at) == ("held", 6, None)
    dependent = place_of(summary, _job(depends_on=[7, 9]))
    assert dependent.reason_code == "dependency"
    assert dependent.reason == "waiting for job 7, 9 to succeed"
    assert dependent.expected_start_at is None


def test_a_count_waits_for_its_nth_device_and_a_device_never_free_gives_no_time() -> None:
    summary = _summary({"n1": {"u0": T - 1, "u1": T + 100, "u2": None}})
    two = place_of(summary, _job(world_size=2))
    assert two.reason_code == "devices_busy"
    assert two.reason == "devices busy: needs 2 on n1, 1 free after the jobs ahead"
    assert two.expected_start_at == datetime.fromtimestamp(T + 100, UTC)
    assert two.expected_start_from_time_limits is False
    three = place_of(summary, _job(world_size=3))
    assert three.expected_start_at is None  # u2 is never expected free
    four = place_of(summary, _job(world_size=4))
    assert four.expected_start_at is None  # more than the node has


def test_named_devices_wait_for_the_last_of_them_on_every_node() -> None:
    summary = _summary({"n1": {"u0": T - 1}, "n2": {"v0": T + 30}})
    job = _job(world_size=2, requested_devices=["u0", "v0"], requested_nodes=["n1", "n2"])
    place = place_of(summary, job)
    assert place.reason == "devices busy: needs 2 on n1, n2, 1 free after the jobs ahead"
    assert place.expected_start_at == datetime.fromtimestamp(T + 30, UTC)


def test_a_count_over_nodes_takes_the_soonest_shape_it_allows() -> None:
    summary = _summary(
        {
            "a": {"a0": T - 1, "a1": T + 200},
            "b": {"b0": T - 1, "b1": T + 500},
            "c": {"c0": T - 1, "c1": T - 1, "c2": T - 1, "c3": T + 1000},
        }
    )
    place = place_of(summary, _job(world_size=4, spread_nodes=2))
    # 1 x 4 on c at T+1000; 2 x 2 on c and a at T+200 (c's second device is free now).
    assert place.expected_start_at == datetime.fromtimestamp(T + 200, UTC)
    assert place.reason == (
        "devices busy: needs 1 x 4 or 2 x 2 (nodes x devices) on the nodes, "
        "5 free after the jobs ahead"
    )


def test_a_device_taken_since_the_pass_is_named_with_its_holder() -> None:
    summary = _summary({"n1": {"u0": T - 1, "u1": T - 1}})
    held = {("n1", "u1"): HeldNow(job_id=42, index=1, limit_at=T + 600)}
    named = place_of(summary, _job(requested_devices=["u1"]), held)
    assert named.reason == "devices busy: n1/1 held by job 42"
    assert named.expected_start_at == datetime.fromtimestamp(T + 600, UTC)
    assert named.expected_start_from_time_limits is True
    # A count on the node still finds u0 free: it is told it starts after the jobs ahead.
    count = place_of(summary, _job(), held)
    assert count.reason_code == "priority"
    assert count.expected_start_at == datetime.fromtimestamp(T - 1, UTC)


def test_held_now_reads_the_devices_held_on_the_nodes_and_their_holders_limits(
    db: Session, devices: str
) -> None:
    started = make_job(db, devices=[2], status=JobStatus.running)
    placed = make_job(db, devices=[5])  # placed, not started: its limit runs from its submit
    db.execute(
        text(
            "UPDATE jobs SET started_at = now() - interval '60 s', time_limit_s = 600 WHERE id = :j"
        ),
        {"j": started.id},
    )
    db.commit()
    uuids = dict(db.execute(select(Device.index, Device.uuid).where(Device.node == devices)).all())
    now = float(db.scalar(text("SELECT extract(epoch FROM now())")))
    held = queue_summary.held_now(db, [devices])
    db.rollback()
    assert set(held) == {(devices, uuids[2]), (devices, uuids[5])}
    first = held[(devices, uuids[2])]
    assert (first.job_id, first.index) == (started.id, 2)
    assert first.limit_at == pytest.approx(now + 540, abs=2)
    second = held[(devices, uuids[5])]
    assert (second.job_id, second.index) == (placed.id, 5)
    assert second.limit_at == pytest.approx(now + placed.time_limit_s, abs=5)
    assert queue_summary.held_now(db, ["elsewhere"]) == {}


def test_compute_counts_the_jobs_ahead_and_when_each_device_frees(
    db: Session, devices: str
) -> None:
    holder = make_job(db, devices=[0], status=JobStatus.running)
    db.execute(
        text("UPDATE jobs SET started_at = now(), time_limit_s = 100 WHERE id = :j"),
        {"j": holder.id},
    )
    db.commit()
    waiting = [make_job(db, devices=[0], queue=True) for _ in range(2)]
    uuid0 = db.scalar(select(Device.uuid).where(Device.node == devices, Device.index == 0))
    now = float(db.scalar(text("SELECT extract(epoch FROM now())")))
    db.rollback()
    plan, summary = queue_summary.compute(db, None, half_life_s=DAY_S)
    db.rollback()
    assert len(plan.infos) == 2
    assert summary.ahead == [(0, 0.0, 2)]  # two waiting, priority 0, their owner's usage
    assert summary.written_at == pytest.approx(time.time(), abs=5)
    free_at = summary.free_at[devices]
    assert len(free_at) == 8
    # Device 0: after the holder's 100 s, then each waiting job's whole limit (none has run).
    limits = sum(w.time_limit_s for w in waiting)
    assert uuid0 is not None and free_at[uuid0] == pytest.approx(now + 100 + limits, abs=2)
    assert sum(1 for t in free_at.values() if t is not None and t <= now + 1) == 7


def test_jobs_held_one_after_the_other_are_not_both_position_one(db: Session, devices: str) -> None:
    """The summary's pass saw neither: the second counts the first ahead of it (one read)."""
    make_job(db, devices=[0], status=JobStatus.running)  # they wait behind it
    first = make_job(db, devices=[0], queue=True)
    second = make_job(db, devices=[0], queue=True)
    db.execute(
        text("UPDATE jobs SET held = true WHERE id IN (:a, :b)"), {"a": first.id, "b": second.id}
    )
    db.commit()
    db.expire_all()
    summary = _summary({devices: {"u0": T}})
    summary = Summary(time.time() - 5, summary.usage, [], summary.free_at)
    places = [
        place_of(summary, job, since=queue_summary.submitted_since(db, summary, job))
        for job in (db.get(Job, first.id), db.get(Job, second.id))
    ]
    db.rollback()
    assert [(p.reason_code, p.position) for p in places] == [("held", 1), ("held", 2)]
    # a job submitted before the pass is the pass's to count, not counted twice
    later = Summary(time.time() + 5, summary.usage, [], summary.free_at)
    assert queue_summary.submitted_since(db, later, db.get(Job, second.id)) == 0  # type: ignore[arg-type]
