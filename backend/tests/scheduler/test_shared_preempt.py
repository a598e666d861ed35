"""Preemption that counts sharing, through the scheduler's real pass over Postgres.

A waiting exclusive job of higher priority stops the two preemptible sharing jobs on a device
(never the non-preemptible one beside another job on the other device), and starts on that
device only once both have released it (each stopped as any victim: its segment "preempted by
job N"). A waiting *sharing* job of higher priority stops sharing jobs until its reservation
fits (plan/share_preempt.py: the lowest priority, then the largest reservation, each one the
room does without spared; never a non-preemptible one), starts once they have released their
bytes, and the reservations on the device never exceed its usable memory meanwhile; where no
set of preemptible jobs frees enough, nothing is stopped and it waits for memory. Of jobs alike
in priority and size, the one that checkpointed last is stopped: it loses the least work."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from harness import TEST_NODE, register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import get_settings
from gpudeck.models import Job, JobStatus
from gpudeck.scheduler.duties import Context, schedule_queue
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.jobs.events import CheckpointRecord, record_checkpoint
from gpudeck.services.placement.recommend import usable_when_idle
from gpudeck.services.queue.passes import run_pass
from gpudeck.services.queue.plan import Info
from gpudeck.services.runs import lifecycle as runs
from gpudeck.services.submit import submission
from gpudeck.services.submit.checks import Submitter

GiB = 1024**3
# What the trigger lets the shares on a 20 GiB device add up to: 19 GiB (a simulated device's
# ranks run on the host, whose memory must hold each job: hence not 80 GiB ones).
USABLE = usable_when_idle(20 * GiB)
LIVE_SUMS = text(
    "SELECT gpu_index, sum(reserved_bytes) FROM allocations "
    "WHERE released_at IS NULL AND reserved_bytes IS NOT NULL GROUP BY gpu_index"
)


def _share_spec(reserved_bytes: int, **fields: Any) -> JobCreate:
    """A script job sharing by memory that reserves `reserved_bytes` a device: its declared
    memory plus the CUDA context reserve submit adds (the configured one)."""
    declared = reserved_bytes - get_settings().cuda_context_reserve_bytes
    config = {"entrypoint": "train.py", "memory_per_device_bytes": declared}
    return JobCreate.model_validate(
        {"kind": "script", "config": config, "share": "memory", **fields}
    )


def _running_share(
    db: Session,
    index: int,
    *,
    preemptible: bool,
    reserved_bytes: int = 10 * GiB,
    priority: int = 0,
) -> Job:
    """A sharing job of ada's placed on device `index` at submit, claimed and running."""
    spec = _share_spec(
        reserved_bytes,
        devices=[{"index": index, "node": TEST_NODE}],
        preemptible=preemptible,
        priority=priority,
    )
    job = submission.create_job(db, spec, owner="ada")
    assert runs.claim_job(db, job.id, TEST_NODE) is not None  # placed at once: room for it
    assert runs.mark_running(db, job.id)
    db.commit()
    return job


def _live(db: Session) -> dict[int, list[int]]:
    """Each job's devices held now."""
    rows = db.execute(
        text("SELECT job_id, gpu_index FROM allocations WHERE released_at IS NULL")
    ).all()
    db.rollback()
    held: dict[int, list[int]] = {}
    for job_id, index in rows:
        held.setdefault(job_id, []).append(index)
    return held


def _stopping(db: Session) -> dict[int, int | None]:
    """Each job asked to stop, and for whom."""
    rows = db.execute(
        text("SELECT id, preempted_by_job_id FROM jobs WHERE preempt_requested_at IS NOT NULL")
    ).all()
    db.rollback()
    return {job_id: by for job_id, by in rows}


def _reserved(db: Session) -> dict[int, int]:
    """The bytes live shared allocations reserve on each device."""
    sums = {index: int(total) for index, total in db.execute(LIVE_SUMS)}
    db.rollback()
    return sums


def _infos(db: Session) -> dict[int, Info]:
    """Each waiting job's place and reason, as the queue view reads them (the same pass)."""
    infos = run_pass(db, None, half_life_s=3600).plan.infos
    db.rollback()
    return infos


@contextmanager
def _watching(sessions: sessionmaker[Session]) -> Iterator[Counter[int]]:
    """The most bytes live shared allocations ever reserved on each device, read from the
    table over and over in a session of its own while the block runs (passes and stops)."""
    most: Counter[int] = Counter()
    stop = threading.Event()

    def watch() -> None:
        with sessions() as session:
            while not stop.is_set():
                for index, total in session.execute(LIVE_SUMS):
                    most[index] = max(most[index], int(total))
                session.rollback()  # a fresh snapshot for the next read

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        yield most
    finally:
        stop.set()
        watcher.join()


def test_an_exclusive_job_preempts_both_sharing_jobs_of_a_device_and_starts_once_released(
    scheduler: Context, db: Session
) -> None:
    register_devices(db, "2x80GiB")
    db.execute(text("UPDATE nodes SET share_memory = true"))
    db.commit()
    first, second = (_running_share(db, 0, preemptible=True) for _ in range(2))
    kept = _running_share(db, 1, preemptible=False)  # its device holds a job it may not stop
    beside = _running_share(db, 1, preemptible=True)
    spec = JobCreate.model_validate(
        {"kind": "sae", "config": {"steps": 10, "batch_size": 64}, "count": 1,
         "node": TEST_NODE, "priority": 5}
    )  # fmt: skip
    urgent = submission.create_job(db, spec, owner=Submitter("boss", is_admin=True))
    db.commit()
    assert _live(db).get(urgent.id) is None  # every device is shared: it waits

    assert schedule_queue(scheduler) == []
    assert _stopping(db) == {first.id: urgent.id, second.id: urgent.id}  # not kept, not beside
    assert runs.requeue_job(db, first.id) is not None  # its worker stopped it
    db.commit()
    assert schedule_queue(scheduler) == []  # the other still holds device 0: nothing starts there
    assert urgent.id not in _live(db) and second.id in _live(db)
    assert runs.requeue_job(db, second.id) is not None
    db.commit()

    assert schedule_queue(scheduler) == [urgent.id]
    held = _live(db)
    assert held[urgent.id] == [0] and held[kept.id] == [1] and held[beside.id] == [1]
    assert first.id not in held and second.id not in held  # they wait to resume
    for victim in (first, second):
        segment = runs.segments(db, victim.id)[-1]
        assert (segment.outcome, segment.reason) == ("preempted", f"preempted by job {urgent.id}")
    db.rollback()
    assert kept.id not in _stopping(db) and beside.id not in _stopping(db)


def test_a_sharing_job_stops_the_fewest_sharing_jobs_it_needs_and_starts_once_released(
    scheduler: Context, db: Session, session_factory: sessionmaker[Session]
) -> None:
    register_devices(db, "1x20GiB")
    db.execute(text("UPDATE nodes SET share_memory = true, share_across_users = true"))
    db.commit()
    # ada's jobs fill device 0's 19 usable GiB; the one of the lowest priority may not be stopped.
    kept = _running_share(db, 0, preemptible=False, reserved_bytes=2 * GiB, priority=-3)
    lowest = _running_share(db, 0, preemptible=True, reserved_bytes=2 * GiB, priority=-2)
    mid = _running_share(db, 0, preemptible=True, reserved_bytes=4 * GiB, priority=-1)
    small = _running_share(db, 0, preemptible=True, reserved_bytes=3 * GiB, priority=-1)
    large = _running_share(db, 0, preemptible=True, reserved_bytes=8 * GiB)
    assert _reserved(db) == {0: USABLE} == {0: 19 * GiB}
    spec = _share_spec(11 * GiB, count=1, node=TEST_NODE, priority=5)
    urgent = submission.create_job(db, spec, owner=Submitter("boss", is_admin=True))
    db.commit()
    assert urgent.id not in _live(db)  # no room: it waits

    with _watching(session_factory) as most:
        assert schedule_queue(scheduler) == []
        # The rule (plan/share_preempt.py): the lowest priority, then the largest reservation,
        # until the room holds 11 GiB: lowest, mid, small, large (2 + 4 + 3 + 8 = 17); then
        # each the room does without is spared: lowest (15 left), mid (11 left), not small
        # (8). No 2 GiB, 4 GiB or 3 GiB job together frees 11 (9 GiB): large must go, and one
        # of them beside it; two victims, freeing just what it needs. kept is never asked.
        assert _stopping(db) == {small.id: urgent.id, large.id: urgent.id}
        info = _infos(db)[urgent.id]
        assert info.reason_code == "preempting"
        assert f"job {small.id}" in info.reason and f"job {large.id}" in info.reason

        assert runs.requeue_job(db, large.id) is not None  # its worker stopped it
        db.commit()
        # 8 GiB free now, but small still holds 3: the urgent job waits, and the 8 GiB just
        # freed is not given back to large (the room left both now and after is none).
        assert schedule_queue(scheduler) == []
        held = _live(db)
        assert urgent.id not in held and large.id not in held and small.id in held
        assert _reserved(db) == {0: 11 * GiB}

        assert runs.requeue_job(db, small.id) is not None
        db.commit()
        assert schedule_queue(scheduler) == [urgent.id]
        assert _live(db) == {kept.id: [0], lowest.id: [0], mid.id: [0], urgent.id: [0]}
        assert _reserved(db) == {0: USABLE}
        # The stopped jobs wait for memory; no further pass stops anything: large may stop
        # lowest and mid (6 GiB, short of 8), small only lowest (2 GiB, short of 3).
        assert schedule_queue(scheduler) == [] and _stopping(db) == {}
        infos = _infos(db)
        assert {infos[large.id].reason_code, infos[small.id].reason_code} == {"insufficient_memory"}
    assert 0 < most[0] <= USABLE  # at no instant over the device's usable memory

    for victim in (large, small):
        segment = runs.segments(db, victim.id)[-1]
        assert (segment.outcome, segment.reason) == ("preempted", f"preempted by job {urgent.id}")
    db.rollback()


def test_a_sharing_job_stops_nothing_when_no_preemptible_jobs_free_enough(
    scheduler: Context, db: Session, session_factory: sessionmaker[Session]
) -> None:
    register_devices(db, "1x20GiB")
    db.execute(text("UPDATE nodes SET share_memory = true, share_across_users = true"))
    db.commit()
    kept = _running_share(db, 0, preemptible=False, reserved_bytes=13 * GiB, priority=-1)
    small = _running_share(db, 0, preemptible=True, reserved_bytes=5 * GiB, priority=-1)
    spec = _share_spec(10 * GiB, count=1, node=TEST_NODE, priority=5)
    urgent = submission.create_job(db, spec, owner=Submitter("boss", is_admin=True))
    db.commit()

    with _watching(session_factory) as most:
        # 1 GiB of room, 6 with small stopped: short of 10 whatever it stops.
        assert schedule_queue(scheduler) == [] and _stopping(db) == {}
        info = _infos(db)[urgent.id]
        assert info.reason_code == "insufficient_memory"
        assert info.reason == (
            f"insufficient memory: device {TEST_NODE}/0: 1.0 GiB free of reservations, "
            "needs 10.0 GiB"
        )
        # Once the job it could not stop ends, the urgent one fits beside small, stopping none.
        assert runs.finish_job(db, kept.id, JobStatus.succeeded) is not None
        db.commit()
        assert schedule_queue(scheduler) == [urgent.id] and _stopping(db) == {}
        assert _live(db) == {small.id: [0], urgent.id: [0]}
    assert 0 < most[0] <= USABLE


def _ran_for(db: Session, job: Job, *, started_s_ago: int, checkpointed_s_ago: int) -> None:
    """Backdate the job's start, and record its checkpoint as written that long ago."""
    db.execute(
        text("UPDATE jobs SET started_at = now() - make_interval(secs => :s) WHERE id = :id"),
        {"s": started_s_ago, "id": job.id},
    )
    record_checkpoint(db, job.id, CheckpointRecord(1, f"checkpoints/{job.id}/step_1", [], 0, None))
    db.execute(
        text("UPDATE checkpoints SET created_at = now() - make_interval(secs => :s) "
             "WHERE job_id = :id"),
        {"s": checkpointed_s_ago, "id": job.id},
    )  # fmt: skip
    db.commit()


def test_a_sharing_job_stops_the_job_that_just_checkpointed_not_one_ten_minutes_past_its_last(
    scheduler: Context, db: Session
) -> None:
    register_devices(db, "1x20GiB")
    db.execute(text("UPDATE nodes SET share_memory = true, share_across_users = true"))
    db.commit()
    # Two alike jobs (8 GiB, priority 0, both running 10 minutes); the older one checkpointed
    # a second ago, the newer one last checkpointed before its current run began (12 minutes
    # ago: a resume restarts from there, so its 10 minutes are lost). Alike but for that, the
    # newest would be stopped.
    fresh = _running_share(db, 0, preemptible=True, reserved_bytes=8 * GiB)
    stale = _running_share(db, 0, preemptible=True, reserved_bytes=8 * GiB)
    _ran_for(db, fresh, started_s_ago=600, checkpointed_s_ago=1)
    _ran_for(db, stale, started_s_ago=600, checkpointed_s_ago=720)
    spec = _share_spec(10 * GiB, count=1, node=TEST_NODE, priority=5)  # 3 GiB free: one must go
    urgent = submission.create_job(db, spec, owner=Submitter("boss", is_admin=True))
    db.commit()

    assert schedule_queue(scheduler) == []
    assert _stopping(db) == {fresh.id: urgent.id}
    assert runs.requeue_job(db, fresh.id) is not None
    db.commit()
    assert schedule_queue(scheduler) == [urgent.id]
    assert _live(db) == {stale.id: [0], urgent.id: [0]}
