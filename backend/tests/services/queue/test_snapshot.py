"""services/queue/snapshot.py: the cluster as the scheduling pass reads it from the real
database. Fair share's usage comes from each segment a job spent on devices (moved from
tests/scheduler/test_fair_share.py); the snapshot takes holders, ended jobs' releasing devices,
outside processes, live memory and offline nodes; a running job's expected end; quotas; free
devices; each owner's share of their time limit that their recent jobs ran; and the seconds
each holding job has run since its newest checkpoint (the work a stop would lose)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from harness import TEST_NODE, make_job
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from gpudeck.models import Device, JobStatus, UserQuota
from gpudeck.services.jobs import events
from gpudeck.services.jobs import state as job_state
from gpudeck.services.placement.live_memory import LiveMemory
from gpudeck.services.placement.recommend import usable_of
from gpudeck.services.queue.plan import Quota
from gpudeck.services.queue.snapshot import (
    RUN_SHARE_DAYS,
    expected_end,
    free_devices,
    quota_of,
    quotas,
    run_shares,
    snapshot,
    unsaved_s,
    usage_by_owner,
)

S = JobStatus
NO_DECAY = 1e9


def _backdate_open_segment(db: Session, job_id: int, started_s_ago: float) -> None:
    db.execute(
        text(
            "UPDATE job_runs SET started_at = now() - make_interval(secs => :s)"
            " WHERE job_id = :j AND ended_at IS NULL"
        ),
        {"s": started_s_ago, "j": job_id},
    )


def test_a_preempted_job_keeps_counting_its_earlier_segments(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0, 1])
    job_state.transition(db, job.id, S.starting)
    job_state.transition(db, job.id, S.running)
    _backdate_open_segment(db, job.id, 100)
    job_state.transition(db, job.id, S.queued, error="preempted by job 9")
    db.commit()
    # 2 devices x 100 s, while it waits again (it used to count nothing until it restarted)
    assert usage_by_owner(db, NO_DECAY)["tester"] == pytest.approx(200, abs=2)

    job_state.transition(db, job.id, S.starting)
    job_state.transition(db, job.id, S.running)
    _backdate_open_segment(db, job.id, 50)
    db.commit()
    assert usage_by_owner(db, NO_DECAY)["tester"] == pytest.approx(300, abs=2)


def test_usage_halves_every_half_life_after_it_ended(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0, 1])
    for target in (S.starting, S.running, S.succeeded):
        job_state.transition(db, job.id, target)
    db.execute(
        text(
            "UPDATE job_runs SET started_at = now() - interval '200 s',"
            " ended_at = now() - interval '100 s' WHERE job_id = :j"
        ),
        {"j": job.id},
    )
    db.commit()
    assert usage_by_owner(db, 100.0)["tester"] == pytest.approx(100, rel=0.02)
    assert usage_by_owner(db, 1.0) == {}  # 100 half-lives ago: forgotten


def test_a_running_job_ends_at_its_measured_rate_never_past_its_limit() -> None:
    # 1,000 steps left at 10 a second: 100 s, well within a limit 900 s away.
    assert expected_end(0.0, 900.0, 100, 1100, 10.0) == (100.0, True)
    # The same job with its limit 30 s away: the limit bounds the estimate.
    assert expected_end(0.0, 30.0, 100, 1100, 10.0) == (30.0, True)
    # Past its total (a last step still being written): now, not a negative time.
    assert expected_end(5.0, 900.0, 1200, 1100, 10.0) == (5.0, True)
    # No rate, a rate of 0 or no total: only the time limit is known, and it is a bound.
    for rate, total in ((None, 1100), (0.0, 1100), (10.0, None)):
        assert expected_end(0.0, 900.0, 100, total, rate) == (900.0, False)


def test_unsaved_work_runs_from_the_newest_checkpoint_or_the_start_of_this_run() -> None:
    def at(epoch_s: float) -> datetime:
        return datetime.fromtimestamp(epoch_s, UTC)

    assert unsaved_s(1000.0, None, None) == 0.0  # not started: nothing to lose
    assert unsaved_s(1000.0, at(400), None) == 600.0  # no checkpoint: all of this run
    assert unsaved_s(1000.0, at(400), at(900)) == 100.0  # since its newest checkpoint
    # A checkpoint from before this run began (it was preempted, then resumed from it): this
    # run's start, which the resume began from.
    assert unsaved_s(1000.0, at(400), at(300)) == 600.0
    assert unsaved_s(1000.0, at(400), at(1001)) == 0.0  # written after the pass's now


def test_the_snapshot_takes_each_holding_jobs_unsaved_seconds(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0, 1], status=JobStatus.running)
    db.execute(
        text("UPDATE jobs SET started_at = now() - interval '600 s' WHERE id = :j"), {"j": job.id}
    )
    for step, ago_s in ((10, 300), (20, 100)):
        record = events.CheckpointRecord(step, f"checkpoints/{job.id}/step_{step}", [], 0, None)
        events.record_checkpoint(db, job.id, record)
        db.execute(
            text(
                "UPDATE checkpoints SET created_at = now() - make_interval(secs => :s)"
                " WHERE job_id = :j AND step = :step"
            ),
            {"s": ago_s, "j": job.id, "step": step},
        )
    db.commit()
    held = {h.id: h for h in snapshot(db, None)[2]}
    db.rollback()
    assert held[job.id].unsaved_s == pytest.approx(100, abs=5)
    assert held[job.id].lost_device_s == pytest.approx(200, abs=10)  # on each of its 2 devices
    # The newest pruned: a resume restarts from the one before.
    events.mark_pruned(db, job.id, [10])
    db.commit()
    held = {h.id: h for h in snapshot(db, None)[2]}
    db.rollback()
    assert held[job.id].unsaved_s == pytest.approx(300, abs=5)


def _set_external(db: Session, index: int) -> None:
    db.execute(
        text(
            "UPDATE devices SET external_processes = '[{\"pid\": 4242}]'::jsonb"
            " WHERE node = :n AND index = :i"
        ),
        {"n": TEST_NODE, "i": index},
    )
    db.commit()


def test_free_devices_leaves_out_held_devices_and_outside_processes(
    db: Session, devices: str
) -> None:
    assert free_devices(db, devices) == 8
    make_job(db, devices=[0, 1])
    _set_external(db, 2)
    assert free_devices(db, devices) == 5
    assert free_devices(db, "elsewhere") == 0


def test_the_snapshot_takes_holders_releasing_devices_outside_processes_and_live_memory(
    db: Session, devices: str
) -> None:
    running = make_job(db, devices=[0], status=JobStatus.running)
    db.execute(
        text(
            "UPDATE jobs SET started_at = now() - interval '100 s', time_limit_s = 1000,"
            " progress_step = 100, progress_total = 1100, progress_rate = 10 WHERE id = :j"
        ),
        {"j": running.id},
    )
    db.commit()
    # Ended, but its node has not yet confirmed its ranks are gone: the allocation is live.
    ended = make_job(db, devices=[1], status=JobStatus.succeeded)
    _set_external(db, 2)
    waiter = make_job(db, devices=[0], queue=True)
    uuid3 = db.scalar(select(Device.uuid).where(Device.node == devices, Device.index == 3))
    assert uuid3 is not None
    total, free = 80 * 1024**3, 50 * 1024**3
    live = {(devices, uuid3): LiveMemory(devices, 3, total, free)}

    now, devs, holding, waiting = snapshot(db, live)
    db.rollback()
    by_index = {d.index: d for d in devs}
    assert len(by_index) == 8 and all(d.online for d in devs)
    assert (by_index[0].holder, by_index[0].releasing) == (running.id, False)
    assert (by_index[1].holder, by_index[1].releasing) == (ended.id, True)
    assert by_index[2].external and by_index[2].holder is None
    assert by_index[3].usable_bytes == usable_of(free, total)
    assert by_index[4].usable_bytes is None  # no reading: unknown, not zero
    held = {h.id: h for h in holding}
    assert set(held) == {running.id, ended.id}
    # 1,000 steps left at 10 a second: ~100 s from now, an estimate (its limit is ~900 s away).
    assert held[running.id].ends_at == pytest.approx(now + 100, abs=5)
    assert held[running.id].estimated and not held[running.id].ended
    assert held[running.id].run_s == pytest.approx(110)  # its 1,100 steps at 10 a second
    assert held[ended.id].ended and held[ended.id].ends_at == now
    assert [w.id for w in waiting] == [waiter.id]


def test_an_offline_nodes_devices_are_not_online(db: Session, devices: str) -> None:
    db.execute(
        text("UPDATE nodes SET last_seen_at = now() - interval '5 minutes' WHERE name = :n"),
        {"n": devices},
    )
    db.commit()
    _, devs, _, _ = snapshot(db, None)
    assert len(devs) == 8 and not any(d.online for d in devs)


def test_quotas_are_read_per_user_and_no_row_means_no_limit(db: Session) -> None:
    db.add(UserQuota(user_name="alice", max_devices=2, max_queued_jobs=5))
    db.add(UserQuota(user_name="bob", max_devices=None, max_queued_jobs=1))
    db.commit()
    assert quota_of(db, "alice") == Quota(2, 5)
    assert quota_of(db, "carol") == Quota(None, None)
    assert quotas(db) == {"alice": Quota(2, 5), "bob": Quota(None, 1)}


def _ran(db: Session, owner: str, share: float, *, days_ago: int = 0) -> None:
    """A succeeded job of `owner` that ran `share` of its 100 s time limit, ended `days_ago`."""
    job = make_job(db, count=1, queue=True, status=JobStatus.succeeded)
    db.execute(
        text(
            "UPDATE jobs SET owner = :o, time_limit_s = 100,"
            " finished_at = now() - make_interval(days => :d),"
            " started_at = now() - make_interval(days => :d, secs => :s) WHERE id = :j"
        ),
        {"o": owner, "d": days_ago, "s": 100 * share, "j": job.id},
    )
    db.commit()


def test_run_shares_are_each_owners_median_recent_share_of_the_limit_capped_at_one(
    db: Session, devices: str
) -> None:
    # alice: 0.2, and two jobs that ran past their limit (counted as 1.0: the limit stopped
    # them); a job from before the window is left out (with it the median would be 0.6).
    for share in (0.2, 3.0, 5.0):
        _ran(db, "alice", share)
    _ran(db, "alice", 0.1, days_ago=RUN_SHARE_DAYS + 5)
    # bob: two jobs are too few to tell (RUN_SHARE_MIN).
    _ran(db, "bob", 0.5)
    _ran(db, "bob", 0.5)
    shares = run_shares(db)
    assert shares.keys() == {"alice"}
    assert shares["alice"] == pytest.approx(1.0)
