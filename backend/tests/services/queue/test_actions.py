"""services/queue/actions.py: what users and admins do to waiting jobs, on the real database.
Hold and release only a queued job (a job already placed on devices cannot be held: it is
starting), owners may lower a priority and only admins raise it, quotas default to no limit
and are written per user; and every change wakes the scheduler at once when it commits."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg
import pytest
from harness import make_job
from sqlalchemy.orm import Session

from gpudeck.core.config import Settings
from gpudeck.models import Job, JobStatus, UserQuota
from gpudeck.scheduler.wake import conninfo
from gpudeck.schemas.quotas import QuotaUpdate
from gpudeck.services.errors import Conflict, Forbidden, InvalidTransition
from gpudeck.services.jobs.state import WAKE_CHANNEL
from gpudeck.services.queue import actions

Wakes = Callable[[], list[str]]


@contextmanager
def listening(settings: Settings) -> Iterator[Wakes]:
    """The scheduler's wake-ups (payloads) committed since the block began, one call per
    commit: a LISTEN on the channel the scheduler's listener uses. Opened after a test's set-up,
    whose submits wake it too (as arrivals)."""
    with psycopg.connect(conninfo(settings.sqlalchemy_url), autocommit=True) as conn:
        conn.execute(f"LISTEN {WAKE_CHANNEL}")

        def heard() -> list[str]:
            # Delivered on commit; the timeout only bounds a wake-up that never comes.
            return [n.payload for n in conn.notifies(timeout=2.0, stop_after=1)]

        yield heard


def _waiting(db: Session) -> Job:
    make_job(db, devices=[0])
    return make_job(db, devices=[0], queue=True)


def test_hold_and_release_a_waiting_job_and_wake_the_scheduler_at_once(
    db: Session, devices: str, settings: Settings
) -> None:
    job = _waiting(db)
    with listening(settings) as wakes:
        assert actions.set_held(db, job.id, True).held is True
        db.commit()
        # Urgent, not an arrival's coalesced wake-up: a release may let it start now.
        assert wakes() == [""]
        db.expire_all()
        assert db.get(Job, job.id).held is True  # type: ignore[union-attr]
        assert actions.set_held(db, job.id, False).held is False
        db.commit()
        assert wakes() == [""]


def test_a_placed_or_running_job_cannot_be_held(db: Session, devices: str) -> None:
    placed = make_job(db, devices=[1])  # queued, with its devices: starting
    with pytest.raises(Conflict) as refused:
        actions.set_held(db, placed.id, True)
    assert refused.value.code == "already_placed" and refused.value.field == "status"
    db.rollback()
    running = make_job(db, devices=[2], status=JobStatus.running)
    with pytest.raises(InvalidTransition):
        actions.set_held(db, running.id, True)
    db.rollback()
    db.expire_all()
    assert not db.get(Job, placed.id).held  # type: ignore[union-attr]


def test_owners_lower_a_priority_and_only_admins_raise_it(
    db: Session, devices: str, settings: Settings
) -> None:
    job = _waiting(db)
    with listening(settings) as wakes:
        assert actions.set_priority(db, job.id, -3, is_admin=False).priority == -3
        db.commit()
        assert wakes() == [""]
    with pytest.raises(Forbidden) as refused:
        actions.set_priority(db, job.id, -2, is_admin=False)  # a raise, however small
    assert refused.value.field == "priority" and "-3" in refused.value.message
    db.rollback()
    assert actions.set_priority(db, job.id, 10, is_admin=True).priority == 10
    db.commit()
    # A running job may be reprioritised (it matters if it is preemptible); an ended one not.
    running = make_job(db, devices=[3], status=JobStatus.running)
    assert actions.set_priority(db, running.id, -1, is_admin=False).priority == -1
    db.commit()
    ended = make_job(db, devices=[4], status=JobStatus.succeeded)
    with pytest.raises(InvalidTransition):
        actions.set_priority(db, ended.id, 0, is_admin=True)


def test_quotas_default_to_no_limit_and_are_written_per_user(
    db: Session, settings: Settings
) -> None:
    unset = actions.get_quota(db, "alice")
    assert (unset.max_devices, unset.max_queued_jobs) == (None, None)
    db.commit()
    assert db.get(UserQuota, "alice") is None  # reading the default writes no row

    with listening(settings) as wakes:
        actions.set_quota(db, "alice", QuotaUpdate(max_devices=2, max_queued_jobs=5))
        db.commit()
        assert wakes() == [""]  # a raised quota may let a waiting job start
    actions.set_quota(db, "alice", QuotaUpdate(max_devices=None, max_queued_jobs=1))
    db.commit()
    db.expire_all()
    quota = actions.get_quota(db, "alice")
    assert (quota.max_devices, quota.max_queued_jobs) == (None, 1)
    assert db.query(UserQuota).count() == 1
