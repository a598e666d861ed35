"""Fair share's usage comes from each segment a job spent on devices, in the real database."""

from __future__ import annotations

import pytest
from harness import make_job
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.models import JobStatus
from gpudeck.services.jobs import state as job_state
from gpudeck.services.queue.snapshot import usage_by_owner

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
