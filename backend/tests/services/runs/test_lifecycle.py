"""services/runs/lifecycle: a run as its worker sees it. A job is claimed once, by its node, only
once placed; it runs, heartbeats (the answer says stop, and drops jobs no longer active), ends
once and frees its devices, or is requeued when preempted; a starting worker picks up its node's
placed jobs; the ranks' host memory is kept on the job when it ends."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from harness import TEST_NODE, make_job
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.models import Allocation, Job, JobStatus
from gpudeck.services.jobs import cancel
from gpudeck.services.runs import lifecycle as runs

GiB = 1024**3


def live_allocations(db: Session, job_id: int) -> int:
    db.expire_all()
    return db.query(Allocation).filter_by(job_id=job_id, released_at=None).count()


def stored(db: Session, job_id: int) -> Job:
    db.expire_all()
    job = db.get(Job, job_id)
    assert job is not None
    return job


def test_a_job_is_claimed_once(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0, 1])
    plan = runs.claim_job(db, job.id, TEST_NODE)
    db.commit()
    assert plan is not None and plan.device_indices == [0, 1]
    assert plan.device_source == "simulated" and plan.world_size == 2
    assert runs.claim_job(db, job.id, TEST_NODE) is None  # a redelivered task is a no-op
    db.commit()


def test_a_job_of_another_node_is_not_claimed(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0])
    assert runs.claim_job(db, job.id, "elsewhere") is None
    db.rollback()


def test_heartbeat_reports_cancel_and_drops_finished_jobs(db: Session, devices: str) -> None:
    running = make_job(db, devices=[0], status=JobStatus.running)
    done = make_job(db, devices=[1], status=JobStatus.succeeded)
    cancel.cancel_job(db, running.id)
    pulses = runs.heartbeat(db, [running.id, done.id])
    db.commit()
    assert set(pulses) == {running.id}
    assert pulses[running.id].cancel_requested_at is not None


def test_finish_releases_devices_and_is_idempotent(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0, 1], status=JobStatus.running)
    assert runs.finish_job(db, job.id, JobStatus.failed, error="boom") is not None
    db.commit()
    assert live_allocations(db, job.id) == 0
    assert runs.finish_job(db, job.id, JobStatus.succeeded) is None  # already terminal


def test_a_job_waiting_for_devices_is_not_claimed_until_placed(db: Session, devices: str) -> None:
    make_job(db, devices=[0])
    waiting = make_job(db, devices=[0], queue=True)  # behind the first: it holds nothing
    assert runs.claim_job(db, waiting.id, TEST_NODE) is None
    db.commit()
    assert stored(db, waiting.id).status == JobStatus.queued  # still the scheduler's


def test_the_plan_says_whether_the_job_ran_before(db: Session, devices: str) -> None:
    """A preempted job placed again continues from its own checkpoint, not from step 0."""
    fresh = make_job(db, devices=[0], config={"steps": 10, "batch_size": 64, "seed": 3})
    again = make_job(db, devices=[1])
    db.execute(text("UPDATE jobs SET started_at = now() WHERE id = :j"), {"j": again.id})
    db.commit()
    first = runs.claim_job(db, fresh.id, TEST_NODE)
    second = runs.claim_job(db, again.id, TEST_NODE)
    db.commit()
    assert first is not None and not first.ran_before and first.config["seed"] == 3
    assert second is not None and second.ran_before and second.device_indices == [1]
    assert first.nnodes == 1 and first.leads and first.total_world_size is None


def test_mark_running_moves_only_a_starting_job(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0])
    assert runs.claim_job(db, job.id, TEST_NODE) is not None
    assert runs.mark_running(db, job.id)
    db.commit()
    running = stored(db, job.id)
    assert running.status == JobStatus.running and running.started_at is not None
    assert not runs.mark_running(db, job.id)  # a second report changes nothing
    cancelled = make_job(db, devices=[1], status=JobStatus.starting)
    runs.finish_job(db, cancelled.id, JobStatus.cancelled)  # cancelled while its ranks started
    assert not runs.mark_running(db, cancelled.id)
    db.commit()
    assert stored(db, cancelled.id).status == JobStatus.cancelled


def test_a_preempted_job_waits_again_without_its_devices(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0, 1])
    assert runs.claim_job(db, job.id, TEST_NODE) is not None and runs.mark_running(db, job.id)
    db.execute(
        text(
            "UPDATE jobs SET preempted_by_job_id = 99, preempt_requested_at = now(),"
            " dispatched_at = now() WHERE id = :j"
        ),
        {"j": job.id},
    )
    db.commit()
    requeued = runs.requeue_job(db, job.id)
    db.commit()
    assert requeued is not None
    again = stored(db, job.id)
    assert again.status == JobStatus.queued and live_allocations(db, job.id) == 0
    assert again.preempt_requested_at is None and again.dispatched_at is None  # sent again
    [segment] = runs.segments(db, job.id)  # its run so far, closed with the cause
    assert (segment.outcome, segment.reason) == ("preempted", "preempted by job 99")
    assert segment.ended_at is not None
    assert runs.requeue_job(db, job.id) is None  # no longer running: nothing to requeue


def test_a_starting_worker_picks_up_its_nodes_placed_jobs_oldest_first(
    db: Session, devices: str
) -> None:
    older = make_job(db, devices=[2])
    newer = make_job(db, devices=[1])
    make_job(db, devices=[0], status=JobStatus.running)  # its own, but already running
    make_job(db, devices=[1], queue=True)  # waits for a device: the scheduler's
    assert runs.queued_job_ids(db, TEST_NODE) == [older.id, newer.id]
    assert runs.queued_job_ids(db, "elsewhere") == []


def test_a_heartbeat_renews_the_lease_and_carries_a_preemption(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0], status=JobStatus.running)
    db.execute(
        text(
            "UPDATE jobs SET heartbeat_at = now() - interval '1 hour',"
            " preempt_requested_at = now() WHERE id = :j"
        ),
        {"j": job.id},
    )
    db.commit()
    pulses = runs.heartbeat(db, [job.id])
    db.commit()
    assert pulses[job.id].status == JobStatus.running
    assert pulses[job.id].preempt_requested_at is not None
    renewed = stored(db, job.id).heartbeat_at
    assert renewed is not None and datetime.now(UTC) - renewed < timedelta(minutes=1)
    assert runs.heartbeat(db, []) == {}


def test_host_memory_on_a_host_that_is_the_device_raises_the_jobs_peak(
    db: Session, devices: str
) -> None:
    """Simulated devices are host processes: a rank's host peak is its device peak too."""
    job = make_job(db, devices=[0, 1], status=JobStatus.running)
    db.execute(
        text(
            "UPDATE jobs SET peak_memory_bytes = :p,"
            ' rank_memory = \'{"device_peak_bytes": {"0": 5}}\' WHERE id = :j'
        ),
        {"p": 2 * GiB, "j": job.id},
    )
    host = {"ranks": [{"rank": 0, "host_peak_rss_bytes": 3 * GiB},
                      {"rank": 1, "host_peak_rss_bytes": GiB}]}  # fmt: skip
    runs.record_rank_memory(db, job.id, host, host_is_device=True)
    db.commit()
    ended = stored(db, job.id)
    assert ended.peak_memory_bytes == 3 * GiB  # the highest rank's
    assert ended.rank_memory is not None
    assert ended.rank_memory["ranks"] == host["ranks"]
    assert ended.rank_memory["device_peak_bytes"] == {"0": 5}  # the sampler's stay
    runs.record_rank_memory(db, job.id, {"ranks": host["ranks"][1:]}, host_is_device=True)
    db.commit()
    assert stored(db, job.id).peak_memory_bytes == 3 * GiB  # a peak never falls


def test_a_heartbeat_locks_its_jobs_in_id_order(
    db: Session, devices: str, session_factory: sessionmaker[Session]
) -> None:
    """Every multi-row locker takes job rows in id order (a sweep's cancel does), or two of
    them deadlock. The first job's row is rewritten so a scan of the table meets the second
    first; with the second locked elsewhere, a heartbeat of both must hold the first (taken
    first) while it waits for the second."""
    first, second = make_job(db, devices=[0]), make_job(db, devices=[1])
    db.execute(
        text("UPDATE jobs SET status = 'running' WHERE id IN (:a, :b)"),
        {"a": first.id, "b": second.id},
    )
    db.execute(text("UPDATE jobs SET name = name || '' WHERE id = :a"), {"a": first.id})
    db.commit()
    with session_factory() as holder, session_factory() as probe:
        holder.execute(text("SELECT 1 FROM jobs WHERE id = :b FOR UPDATE"), {"b": second.id})
        beat = threading.Thread(target=_heartbeat, args=(session_factory, [second.id, first.id]))
        beat.start()
        try:
            assert _waits_for_a_lock(probe), "the heartbeat never waited for the second job"
            probe.execute(text("SET lock_timeout = '100ms'"))
            with pytest.raises(OperationalError, match="lock timeout"):
                probe.execute(text("SELECT 1 FROM jobs WHERE id = :a FOR UPDATE"), {"a": first.id})
            probe.rollback()
        finally:
            holder.rollback()  # the heartbeat goes on
            beat.join(timeout=10)
    assert not beat.is_alive()


def _heartbeat(factory: sessionmaker[Session], job_ids: list[int]) -> None:
    with factory() as session:
        runs.heartbeat(session, job_ids)
        session.commit()


def _waits_for_a_lock(probe: Session) -> bool:
    """Whether another backend waits on a row lock (the heartbeat, behind the holder)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        waiting = probe.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE wait_event_type = 'Lock' AND datname = current_database()"
            )
        )
        probe.rollback()
        if waiting:
            return True
        time.sleep(0.02)
    return False
