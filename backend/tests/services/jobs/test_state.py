from __future__ import annotations

import itertools

import pytest
from harness import make_job
from sqlalchemy import select
from sqlalchemy.orm import Session

from gpudeck.models import Allocation, JobStatus
from gpudeck.services.errors import InvalidTransition, JobNotFound
from gpudeck.services.jobs import state as job_state
from gpudeck.services.runs import lifecycle as runs

S = JobStatus
HAPPY_PATH = [S.starting, S.running, S.succeeded]


def test_allowed_transitions_are_exactly_the_documented_ones() -> None:
    allowed = {(a, b) for a, b in itertools.product(S, S) if job_state.can_transition(a, b)}
    assert allowed == {
        (S.queued, S.starting), (S.queued, S.cancelled),
        (S.starting, S.running), (S.starting, S.failed), (S.starting, S.cancelled),
        (S.starting, S.lost),
        (S.running, S.succeeded), (S.running, S.failed), (S.running, S.cancelled),
        (S.running, S.lost), (S.running, S.timeout),
        (S.running, S.queued),  # preempted: it waits again, to resume
        # a sweep member its early-stopping rule stopped (as a cancel, checkpointed)
        (S.starting, S.stopped_early), (S.running, S.stopped_early),
    }  # fmt: skip


def test_a_preempted_job_frees_its_devices_and_its_segments_are_recorded(
    db: Session, devices: str
) -> None:
    job = make_job(db, devices=[0, 1])
    for target in (S.starting, S.running, S.queued, S.starting, S.running, S.succeeded):
        job_state.transition(
            db, job.id, target, error="preempted by job 9" if target is S.queued else None
        )
        if target is S.queued:
            live = db.scalars(
                select(Allocation).where(
                    Allocation.job_id == job.id, Allocation.released_at.is_(None)
                )
            ).all()
            assert live == [] and job.error is None
    segments = runs.segments(db, job.id)
    assert [(s.outcome, s.reason) for s in segments] == [
        ("preempted", "preempted by job 9"),
        ("succeeded", None),
    ]
    assert all(s.ended_at is not None for s in segments)


def test_happy_path_sets_timestamps_and_releases_devices(db: Session, devices: str) -> None:
    job = make_job(db, devices=[0, 1])
    for target in HAPPY_PATH:
        job = job_state.transition(db, job.id, target)
        live = db.scalars(
            select(Allocation).where(Allocation.job_id == job.id, Allocation.released_at.is_(None))
        ).all()
        assert len(live) == (0 if target is S.succeeded else 2)
    db.commit()
    assert job.status == S.succeeded
    assert job.started_at is not None and job.finished_at is not None


@pytest.mark.parametrize("terminal", [S.failed, S.cancelled, S.lost, S.succeeded, S.timeout])
def test_terminal_states_are_final(db: Session, devices: str, terminal: JobStatus) -> None:
    job = make_job(db, devices=[2])
    job_state.transition(db, job.id, S.starting)
    job_state.transition(db, job.id, S.running)
    job_state.transition(db, job.id, terminal, error="boom" if terminal is S.failed else None)
    for target in S:
        with pytest.raises(InvalidTransition):
            job_state.transition(db, job.id, target)


def test_skipping_a_state_raises_and_changes_nothing(db: Session, devices: str) -> None:
    job = make_job(db, devices=[3])
    with pytest.raises(InvalidTransition, match="queued; it cannot become running"):
        job_state.transition(db, job.id, S.running)
    db.rollback()
    db.refresh(job)
    assert job.status == S.queued and len(job.allocations) == 1


def test_unknown_job(db: Session) -> None:
    with pytest.raises(JobNotFound):
        job_state.transition(db, 424242, S.starting)
