"""A sweep's members show their newest figures whatever their end: a report may carry only
some metrics (an SAE's held-out figures at checkpoints; a member stopped between reports
sends its held-out figures alone), so a member's figures are each metric's newest value, not
its newest row."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.models import JobStatus
from gpudeck.services.jobs import events as job_events
from gpudeck.services.jobs import state as job_state

S = JobStatus
SAE = {"d_in": 16, "d_sae": 64, "batch_size": 64, "steps": 100}
ENDS = [S.succeeded, S.stopped_early, S.cancelled, S.failed, S.timeout, S.running]


def training(step: int) -> dict[str, float]:
    return {"l0": 8.0 - step / 10, "explained_variance": step / 100, "overall_loss": 1 / step}


def heldout(step: int) -> dict[str, float]:
    return {"heldout_l0": 7.5 - step / 10, "heldout_explained_variance": step / 110}


def test_every_member_that_ran_shows_its_newest_figures_whatever_its_end(
    client: TestClient, db: Session, devices: str
) -> None:
    body = {
        "job": {"kind": "sae", "config": SAE, "count": 1},
        "parameters": {"grid": {"seed": list(range(len(ENDS) + 1))}},
    }
    sweep = client.post("/api/sweeps", json=body).json()
    ids = [m["job_id"] for m in sweep["members"]]
    with Session(db.get_bind()) as session:
        for job_id, end in zip(ids, ENDS, strict=False):
            for target in (S.starting, S.running):
                job_state.transition(session, job_id, target)
            # reports every 10 steps, a checkpoint's (with held-out figures) at 20, then the
            # stop at 23: the final checkpoint's report, its held-out figures alone
            rows = [(10, training(10)), (20, training(20) | heldout(20)), (23, heldout(23))]
            job_events.record_metrics(session, job_id, rows[:2])
            job_events.record_metrics(session, job_id, rows[2:])
            if end is S.stopped_early:
                session.execute(
                    text("UPDATE jobs SET early_stopped_at = now() WHERE id = :j"), {"j": job_id}
                )
                end = S.cancelled  # its worker ends it as a cancel: the rule's stop
            if end is not S.running:
                job_state.transition(session, job_id, end)
        session.commit()
    members = client.get(f"/api/sweeps/{sweep['id']}").json()["members"]
    assert [m["status"] for m in members] == [*[e.value for e in ENDS], "queued"]
    for member in members[: len(ENDS)]:
        assert member["metrics"] == training(20) | heldout(23), member["status"]
    assert members[-1]["metrics"] == {}  # it never ran


def test_a_member_run_again_from_its_checkpoint_shows_the_new_runs_figures(
    client: TestClient, db: Session, devices: str
) -> None:
    """A preempted member runs again under the same job from its checkpoint and reports steps
    it had reported before: the newest figures are the new run's."""
    body = {"job": {"kind": "sae", "config": SAE, "count": 1}, "parameters": {"grid": {"k": [8]}}}
    sweep = client.post("/api/sweeps", json=body).json()
    (job_id,) = [m["job_id"] for m in sweep["members"]]
    with Session(db.get_bind()) as session:
        for target in (S.starting, S.running):
            job_state.transition(session, job_id, target)
        job_events.record_metrics(session, job_id, [(10, training(10)), (20, training(20))])
        job_events.record_metrics(session, job_id, [(20, {"l0": 3.0})])  # the second run
        session.commit()
    (member,) = client.get(f"/api/sweeps/{sweep['id']}").json()["members"]
    assert member["metrics"] == training(20) | {"l0": 3.0}
