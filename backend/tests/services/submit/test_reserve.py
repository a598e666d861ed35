"""The reservation step of a submit (services/submit/reserve.py): a job that may start takes its
devices in the submit's transaction unless a job waits ahead of it on its nodes; devices whose
live free memory cannot hold the estimate are refused (named) or passed over (count) unless
forced; a job that does not start waits holding nothing and wakes the scheduler; `queue: false`
is refused instead of waiting; and the owner's device quota decides whether it tries at all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from harness import TEST_NODE, register_devices, statements_run
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gpudeck.models import Device, Job
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.errors import Conflict, GpuBusy, NotEnoughDevices
from gpudeck.services.placement.live_memory import InsufficientMemory, LiveMemory, Readings
from gpudeck.services.queue.plan import Quota
from gpudeck.services.submit import submission
from gpudeck.services.submit.checks import Submitter
from gpudeck.services.submit.placement_request import resolve
from gpudeck.services.submit.reserve import reserve_at_submit, starts_now

GIB = 1024**3
CONFIG = {"steps": 10, "batch_size": 64}


class LiveReads:
    """A `read_live` that counts its calls: the step reads live memory once, only to start."""

    def __init__(self, readings: Readings | None) -> None:
        self.readings = readings
        self.calls = 0

    def __call__(self) -> Readings | None:
        self.calls += 1
        return self.readings


def _spec(**fields: Any) -> JobCreate:
    return JobCreate.model_validate({"kind": "sae", "config": CONFIG, **fields})


def _on(*indices: int, **fields: Any) -> JobCreate:
    return _spec(devices=[{"node": TEST_NODE, "index": i} for i in indices], **fields)


def _submit(
    db: Session,
    spec: JobCreate,
    *,
    estimate: int | None = None,
    read_live: Callable[[], Readings | None] = lambda: None,
    starts: bool = True,
    owner: str = "tester",
) -> Job:
    """The job row the pipeline builds, then the step under test, committed. The estimate is
    given, not traced: what the step does with it is what is tested."""
    placement = resolve(db, spec)
    columns = submission.job_columns(
        spec,
        spec.config,
        name="j",
        owner=owner,
        node=placement.home_node(spec, estimate),
        placement=placement,
        estimate=estimate,
        time_limit_s=3600,
    )
    job = Job(**columns)
    reserve_at_submit(db, job, spec, placement, estimate, read_live, starts)
    db.commit()
    return job


def _held(job: Job) -> list[tuple[str, int]]:
    return [(a.node, a.gpu_index) for a in sorted(job.allocations, key=lambda a: a.rank)]


def _readings(db: Session, free_bytes: dict[int, int], node: str = TEST_NODE) -> Readings:
    """Live readings of the node's devices by index (free bytes), as the samplers report."""
    rows = db.scalars(select(Device).where(Device.node == node)).all()
    return {
        (node, d.uuid): LiveMemory(node, d.index, d.memory_total_bytes, free_bytes[d.index])
        for d in rows
        if d.index in free_bytes
    }


def _wakes(statements: list[str]) -> int:
    return sum("pg_notify" in s for s in statements)


def test_a_job_that_may_start_takes_its_named_devices_in_rank_order(
    db: Session, devices: str
) -> None:
    live = LiveReads(_readings(db, dict.fromkeys(range(8), 70 * GIB)))
    with statements_run(db.get_bind()) as statements:
        job = _submit(db, _on(3, 1), estimate=GIB, read_live=live)
    assert _held(job) == [(TEST_NODE, 3), (TEST_NODE, 1)]
    assert live.calls == 1  # read once for the start, however many checks read it
    assert _wakes(statements) == 0  # it holds its devices: nothing for the scheduler to do


def test_a_job_that_does_not_start_now_waits_holding_nothing_and_wakes_the_scheduler(
    db: Session, devices: str
) -> None:
    live = LiveReads({})
    with statements_run(db.get_bind()) as statements:
        job = _submit(db, _on(0), estimate=GIB, read_live=live, starts=False)
    assert job.id is not None and job.allocations == []
    assert live.calls == 0  # no start: no live read
    assert _wakes(statements) == 1


def test_a_job_does_not_overtake_one_waiting_on_its_nodes(db: Session, devices: str) -> None:
    register_devices(db, "2x80GiB", node="other")
    large = _submit(db, _spec(count=8, node=TEST_NODE), starts=False)  # waits for the whole node
    small = _submit(db, _spec(count=1, node=TEST_NODE))
    assert large.allocations == [] and small.allocations == []  # free devices, but it waits
    elsewhere = _submit(db, _spec(count=1, node="other"))  # nothing waits on that node
    assert _held(elsewhere) == [("other", 0)]


def test_named_devices_short_of_live_memory_are_refused_unless_forced(
    db: Session, devices: str
) -> None:
    estimate = 10 * GIB
    readings = _readings(db, {0: GIB, 1: 70 * GIB})
    with pytest.raises(InsufficientMemory) as short:
        _submit(db, _on(1, 0, queue=False), estimate=estimate, read_live=LiveReads(readings))
    db.rollback()
    assert [d["index"] for d in short.value.extra["devices"]] == [0]
    assert short.value.extra["bytes_per_device"] == estimate
    assert db.scalar(select(func.count()).select_from(Job)) == 0  # refused before any insert
    waits = _submit(db, _on(1, 0), estimate=estimate, read_live=LiveReads(readings))
    assert waits.allocations == []  # queued: it waits for the memory to free
    db.delete(waits)
    db.commit()
    forced_reads = LiveReads(readings)
    forced = _submit(db, _on(1, 0, force=True), estimate=estimate, read_live=forced_reads)
    assert _held(forced) == [(TEST_NODE, 1), (TEST_NODE, 0)]
    assert forced_reads.calls == 0  # force: memory is not judged, so not read


def test_a_count_passes_over_devices_without_live_room(db: Session, devices: str) -> None:
    free = {i: GIB for i in range(8)} | {5: 70 * GIB, 7: 70 * GIB}
    job = _submit(db, _spec(count=2), estimate=10 * GIB, read_live=LiveReads(_readings(db, free)))
    assert _held(job) == [(TEST_NODE, 5), (TEST_NODE, 7)]
    # No estimate: memory is not judged, the first free devices are taken.
    plain = _submit(db, _spec(count=2), read_live=LiveReads(_readings(db, free)))
    assert _held(plain) == [(TEST_NODE, 0), (TEST_NODE, 1)]


def test_a_count_without_room_now_waits_or_with_queue_false_is_refused_naming_why(
    db: Session, devices: str
) -> None:
    free = {i: GIB for i in range(8)} | {2: 70 * GIB}
    reads = LiveReads(_readings(db, free))
    with pytest.raises(NotEnoughDevices) as few:
        _submit(db, _spec(count=2, queue=False), estimate=10 * GIB, read_live=reads)
    db.rollback()
    assert few.value.extra == {"requested": 2, "free": 1, "lacking_memory": 7}
    assert db.scalar(select(func.count()).select_from(Job)) == 0
    waits = _submit(db, _spec(count=2), estimate=10 * GIB, read_live=reads)
    assert waits.id is not None and waits.allocations == []


def test_a_busy_named_device_makes_a_job_wait_or_is_the_answer(db: Session, devices: str) -> None:
    holder = _submit(db, _on(2))
    with pytest.raises(GpuBusy) as busy:
        _submit(db, _on(1, 2, queue=False))
    db.rollback()
    assert [(d["index"], d["held_by_job_id"]) for d in busy.value.extra["busy"]] == [(2, holder.id)]
    waits = _submit(db, _on(1, 2))
    assert waits.allocations == []  # it holds nothing while it waits, not even device 1


def test_a_count_over_nodes_starts_now_on_the_fewest_nodes_or_is_refused(db: Session) -> None:
    register_devices(db, "2x80GiB", node="alpha")
    register_devices(db, "2x80GiB", node="beta")
    _submit(db, _spec(devices=[{"node": "alpha", "index": 0}]))
    job = _submit(db, _spec(count=2, nodes=2))  # alpha has one free: beta holds it whole
    assert _held(job) == [("beta", 0), ("beta", 1)] and job.node == "beta"
    with pytest.raises(Conflict) as none:
        _submit(db, _spec(count=2, nodes=2, queue=False))
    db.rollback()
    assert (none.value.code, none.value.field) == ("not_enough_devices", "count")
    assert "free devices now (free devices per node: alpha 1)" in none.value.message
    waits = _submit(db, _spec(count=2, nodes=2))
    assert waits.allocations == []


@pytest.mark.parametrize("fields", [{"hold": True}, {"depends_on": [1]}])
def test_a_held_or_dependent_job_never_starts_at_submit(
    db: Session, fields: dict[str, Any]
) -> None:
    spec = _spec(count=1, node=TEST_NODE, **fields)
    assert starts_now(db, spec, Submitter("alice"), Quota(), may_start_now=True) is False
    plain = _spec(count=1, node=TEST_NODE)
    assert starts_now(db, plain, Submitter("alice"), Quota(), may_start_now=True) is True
    # A resumed sweep member: the scheduler keeps to the sweep's max_parallel.
    assert starts_now(db, plain, Submitter("alice"), Quota(), may_start_now=False) is False


def test_the_device_quota_counts_what_the_owner_holds_now(db: Session, devices: str) -> None:
    _submit(db, _on(0), owner="alice")
    _submit(db, _on(1, 2), owner="bob")  # another owner's devices do not count
    alice, quota = Submitter("alice"), Quota(max_devices=2)
    assert starts_now(db, _spec(count=1), alice, quota, may_start_now=True) is True
    assert starts_now(db, _spec(count=2), alice, quota, may_start_now=True) is False  # waits
    with pytest.raises(Conflict) as over:
        starts_now(db, _spec(count=2, queue=False), alice, quota, may_start_now=True)
    assert (over.value.code, over.value.field) == ("quota_exceeded", "queue")
    assert "alice may hold 2 devices at once" in over.value.message
