"""services/queue/passes.py: one scheduling pass run over the real database and applied. A start
places the job as decided, or nothing of it when the state moved meanwhile (held, cancelled,
placed, or a device taken: the partial unique index decides; moved from
tests/scheduler/test_multinode_queue.py); a preemption is asked for once, of a running
preemptible job only; a waiting job whose dependency failed is cancelled with the reason; the
pass's waiting jobs and usage come back with its plan, and its expected starts as the API's
QueueInfo."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from harness import make_job
from multinode_cases import on, placed, register_three_nodes, submit
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.models import Job, JobStatus
from gpudeck.services.jobs import cancel
from gpudeck.services.queue import actions as queue_actions
from gpudeck.services.queue import passes
from gpudeck.services.queue.plan import Info, Plan, Start

DAY_S = 86400


@pytest.fixture
def nodes(db: Session) -> None:
    register_three_nodes(db)


def test_a_start_that_lost_a_race_reserves_nothing_of_the_job(db: Session, nodes: None) -> None:
    """The partial unique index decides: a device taken between the pass and its start makes
    the whole start fail, not a part of it."""
    job = submit(db, devices=on(("alpha", 0), ("beta", 0)), hold=True)
    queue_actions.set_held(db, job.id, False)
    db.commit()
    decided = passes.compute_plan(db, None, half_life_s=86400).starts
    db.rollback()
    assert [s.job_id for s in decided] == [job.id]
    thief = submit(db, devices=on(("beta", 0)), queue=False)  # takes beta/0 meanwhile
    assert placed(db, thief.id)
    assert passes.start(db, Start(job.id, decided[0].devices)) is False
    db.commit()
    assert placed(db, job.id) == []


def _decided_start(db: Session, nodes: None) -> tuple[Job, Start]:
    """A job spread over alpha and beta that the pass decides to start (not yet started)."""
    job = submit(db, devices=on(("beta", 1), ("alpha", 1)), hold=True)
    queue_actions.set_held(db, job.id, False)
    db.commit()
    (decision,) = passes.compute_plan(db, None, half_life_s=DAY_S).starts
    db.rollback()
    return job, decision


def test_a_start_places_the_job_as_decided_and_learns_its_first_node(
    db: Session, nodes: None
) -> None:
    job, decision = _decided_start(db, nodes)
    assert passes.start(db, decision) is True
    db.commit()
    assert placed(db, job.id) == [(0, "beta", 1), (1, "alpha", 1)]
    db.expire_all()
    assert db.get(Job, job.id).node == "beta"  # type: ignore[union-attr]  # rank 0 claims it
    assert passes.start(db, decision) is False  # placed already: not twice
    db.rollback()


def test_a_start_after_a_hold_or_a_cancel_places_nothing(db: Session, nodes: None) -> None:
    job, decision = _decided_start(db, nodes)
    queue_actions.set_held(db, job.id, True)  # held between the pass and its start
    db.commit()
    assert passes.start(db, decision) is False
    db.commit()
    assert placed(db, job.id) == []
    queue_actions.set_held(db, job.id, False)
    cancel.cancel_job(db, job.id)
    db.commit()
    assert passes.start(db, decision) is False
    db.commit()
    assert placed(db, job.id) == []


def test_a_preemption_is_asked_once_of_a_running_preemptible_job_only(
    db: Session, devices: str
) -> None:
    victim = make_job(db, devices=[0], status=JobStatus.running)
    steady = make_job(db, devices=[1], status=JobStatus.running)
    waiting = make_job(db, devices=[2])
    db.execute(
        text("UPDATE jobs SET preemptible = true WHERE id = ANY(:ids)"),
        {"ids": [victim.id, waiting.id]},
    )
    db.commit()
    assert passes.preempt(db, victim.id, for_job_id=101) is True
    db.commit()
    # A later pass asks again (the victim has not stopped yet): the first asker stays.
    assert passes.preempt(db, victim.id, for_job_id=202) is True
    db.commit()
    db.expire_all()
    stopping = db.get(Job, victim.id)
    assert stopping is not None and stopping.preempted_by_job_id == 101
    assert stopping.preempt_requested_at is not None
    assert passes.preempt(db, steady.id, for_job_id=101) is False  # not preemptible
    assert passes.preempt(db, waiting.id, for_job_id=101) is False  # not running
    cancel.cancel_job(db, victim.id)  # its cancel is already asked: nothing more to stop
    assert passes.preempt(db, victim.id, for_job_id=101) is False
    db.rollback()
    db.expire_all()
    assert db.get(Job, steady.id).preempt_requested_at is None  # type: ignore[union-attr]


def test_a_waiting_job_whose_dependency_failed_is_cancelled_with_the_reason(
    db: Session, devices: str
) -> None:
    waiting = make_job(db, devices=[0], queue=True)
    running = make_job(db, devices=[1], status=JobStatus.running)
    reason = "dependency job 7 ended failed"
    assert passes.cancel_waiting(db, waiting.id, reason) is True
    assert passes.cancel_waiting(db, running.id, reason) is False
    db.commit()
    db.expire_all()
    cancelled = db.get(Job, waiting.id)
    assert cancelled is not None and cancelled.status == JobStatus.cancelled
    assert cancelled.error == reason
    assert db.get(Job, running.id).status == JobStatus.running  # type: ignore[union-attr]


def test_a_pass_returns_its_waiting_jobs_and_usage_with_its_plan(db: Session, devices: str) -> None:
    holder = make_job(db, devices=[0], status=JobStatus.running)
    ten_s_ago = "now() - interval '10 s'"
    db.execute(
        text(f"UPDATE jobs SET started_at = {ten_s_ago}, time_limit_s = 100 WHERE id = :j"),
        {"j": holder.id},
    )
    db.execute(
        text(f"INSERT INTO job_runs (job_id, started_at) VALUES (:j, {ten_s_ago})"),
        {"j": holder.id},
    )
    db.commit()
    waiter = make_job(db, devices=[0], queue=True)
    now = db.scalar(text("SELECT extract(epoch FROM now())"))
    db.rollback()
    result = passes.run_pass(db, None, half_life_s=DAY_S)
    db.rollback()
    assert [w.id for w in result.waiting] == [waiter.id]
    assert result.usage["tester"] == pytest.approx(10, abs=2)  # 1 device x 10 s so far
    assert result.plan.starts == [] and set(result.plan.infos) == {waiter.id}
    info = result.plan.infos[waiter.id]
    assert info.reason_code == "devices_busy"
    # The holder's start plus its limit (no measured rate): a bound from time limits.
    assert info.expected_start == pytest.approx(float(now) + 90, abs=2)
    assert info.from_time_limits
    again = passes.compute_plan(db, None, half_life_s=DAY_S)
    db.rollback()
    assert again.infos == result.plan.infos


def test_queue_infos_give_the_api_its_expected_starts_as_utc_times() -> None:
    at = 1_800_000_000.0
    plan = Plan(
        infos={
            1: Info(1, "devices_busy", "devices busy", at, from_time_limits=True),
            2: Info(2, "held", "held", None),
        }
    )
    infos = passes.queue_infos(plan)
    assert infos[1].position == 1 and infos[1].reason_code == "devices_busy"
    assert infos[1].expected_start_at == datetime.fromtimestamp(at, UTC)
    assert infos[1].expected_start_from_time_limits is True
    assert infos[2].expected_start_at is None
    assert infos[2].expected_start_from_time_limits is False
