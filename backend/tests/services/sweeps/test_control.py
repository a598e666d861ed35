"""A sweep after its creation (services/sweeps/control.py): its members are each index's newest
job; a resume runs again the members that failed, were cancelled, lost or timed out (from a
checkpoint where there is one, else from the start, keeping their index and values) and never
the ones that succeeded or were stopped early; hold and release reach only the members still
waiting for devices; a cancel ends the waiting ones and asks the running ones to stop; the
list and the view count each member once, by its newest job."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import TEST_NODE
from sqlalchemy import select
from sqlalchemy.orm import Session

from gpudeck.engine.checkpoint_dir import COMPLETE_MARKER
from gpudeck.models import Allocation, Checkpoint, Device, Job, JobStatus, Sweep
from gpudeck.schemas.sweeps import SweepCreate
from gpudeck.services.submit.checks import Submitter
from gpudeck.services.sweeps.control import (
    SweepNotFound,
    cancel_sweep,
    get_sweep,
    list_sweeps,
    member_jobs,
    public,
    resume_sweep,
    set_sweep_held,
)
from gpudeck.services.sweeps.create import create_sweep

CONFIG = {"steps": 10, "batch_size": 64, "lr": 1e-3}
WHO = Submitter("alice")


def _sweep(db: Session, members: int, name: str = "s") -> Sweep:
    """A sweep of `members` members over lr, all waiting (as created)."""
    lrs = [i / 1e4 for i in range(1, members + 1)]
    spec = SweepCreate.model_validate(
        {
            "name": name,
            "job": {"kind": "sae", "config": CONFIG, "count": 1, "node": TEST_NODE},
            "parameters": {"grid": {"lr": lrs}},
        }
    )
    sweep = create_sweep(db, spec, owner=WHO)
    db.commit()
    return sweep


def _set(db: Session, job: Job, status: JobStatus) -> None:
    job.status = status
    db.commit()


def _place(db: Session, job: Job, index: int) -> None:
    """The scheduler gave the member its device: it is starting (queued, holding one)."""
    uuid = db.scalar(select(Device.uuid).where(Device.node == TEST_NODE, Device.index == index))
    db.add(Allocation(job_id=job.id, node=TEST_NODE, gpu_uuid=uuid, gpu_index=index, rank=0))
    db.commit()
    db.expire(job)  # its allocations are read again, as a request's fresh session would


def _checkpoint(db: Session, job: Job, data_dir: Path) -> None:
    relative = f"checkpoints/{job.id}/step_5"
    (data_dir / relative).mkdir(parents=True)
    (data_dir / relative / COMPLETE_MARKER).write_bytes(b"")
    db.add(Checkpoint(job_id=job.id, step=5, path=relative, size_bytes=1, files=[]))
    db.commit()


def test_an_unknown_sweep_is_not_found_by_every_action(db: Session, tmp_path: Path) -> None:
    for act in (
        lambda: get_sweep(db, 9),
        lambda: cancel_sweep(db, 9),
        lambda: set_sweep_held(db, 9, True),
        lambda: resume_sweep(db, 9, owner=WHO, data_dir=tmp_path),
    ):
        with pytest.raises(SweepNotFound) as missing:
            act()
        assert (missing.value.code, missing.value.field) == ("sweep_not_found", "sweep_id")


def test_a_resume_reruns_the_members_that_ended_badly_keeping_their_place(
    db: Session, devices: str, tmp_path: Path
) -> None:
    sweep = _sweep(db, 6)
    failed, succeeded, stopped, cancelled, lost, waiting = member_jobs(db, sweep.id)
    for job, status in [
        (failed, JobStatus.failed),
        (succeeded, JobStatus.succeeded),
        (stopped, JobStatus.stopped_early),  # its rule found it hopeless: not run again
        (cancelled, JobStatus.cancelled),
        (lost, JobStatus.lost),
    ]:
        _set(db, job, status)
    _checkpoint(db, cancelled, tmp_path)
    again = resume_sweep(db, sweep.id, owner=WHO, data_dir=tmp_path)
    db.commit()
    newest = member_jobs(db, sweep.id)
    assert [j.sweep_index for j in newest] == list(range(6))  # one job a member, by index
    assert again == [newest[0].id, newest[3].id, newest[4].id]
    assert [j.id for j in newest] == [
        again[0], succeeded.id, stopped.id, again[1], again[2], waiting.id
    ]  # fmt: skip
    assert newest[3].resume_from_job_id == cancelled.id  # from its checkpoint
    assert newest[0].resume_from_job_id is None  # none: from the start
    for old, new in [(failed, newest[0]), (cancelled, newest[3]), (lost, newest[4])]:
        assert (new.sweep_id, new.sweep_params, new.name) == (sweep.id, old.sweep_params, old.name)
        assert new.config == old.config
        assert new.status == JobStatus.queued and new.allocations == []  # max_parallel decides
    assert resume_sweep(db, sweep.id, owner=WHO, data_dir=tmp_path) == []  # nothing ended badly


def test_hold_and_release_reach_only_the_members_still_waiting(db: Session, devices: str) -> None:
    sweep = _sweep(db, 4)
    waiting, placed, running, ended = member_jobs(db, sweep.id)
    _place(db, placed, 0)
    _set(db, running, JobStatus.running)
    _set(db, ended, JobStatus.failed)
    assert set_sweep_held(db, sweep.id, True) == [waiting.id]
    db.commit()
    assert set_sweep_held(db, sweep.id, True) == []  # held already
    assert db.get(Job, placed.id).held is False  # type: ignore[union-attr]
    assert set_sweep_held(db, sweep.id, False) == [waiting.id]
    db.commit()
    assert db.get(Job, waiting.id).held is False  # type: ignore[union-attr]


def test_a_cancel_ends_the_waiting_members_and_asks_the_running_to_stop(
    db: Session, devices: str
) -> None:
    sweep = _sweep(db, 4)
    waiting, placed, running, ended = member_jobs(db, sweep.id)
    _place(db, placed, 0)
    _set(db, running, JobStatus.running)
    _set(db, ended, JobStatus.succeeded)
    done = cancel_sweep(db, sweep.id)
    db.commit()
    assert sorted(done.ended) == sorted([waiting.id, placed.id])
    assert done.stopping == [running.id]
    statuses = {
        j.id: (j.status, j.cancel_requested_at is not None) for j in member_jobs(db, sweep.id)
    }
    assert statuses[waiting.id][0] == JobStatus.cancelled
    assert statuses[running.id] == (JobStatus.running, True)  # its worker ends it
    assert statuses[ended.id] == (JobStatus.succeeded, False)


def test_the_list_and_the_view_count_each_member_by_its_newest_job(
    db: Session, devices: str, tmp_path: Path
) -> None:
    older = _sweep(db, 2, name="older")
    newer = _sweep(db, 3, name="newer")
    first = member_jobs(db, newer.id)[0]
    _set(db, first, JobStatus.failed)
    resume_sweep(db, newer.id, owner=WHO, data_dir=tmp_path)  # its newest job waits again
    db.commit()
    _set(db, member_jobs(db, newer.id)[1], JobStatus.succeeded)
    listed = list_sweeps(db)
    assert [(s.id, s.name) for s in listed] == [(newer.id, "newer"), (older.id, "older")]
    assert listed[0].counts == {"queued": 2, "succeeded": 1}  # the failed job is history
    assert listed[1].counts == {"queued": 2}
    assert [s.id for s in list_sweeps(db, limit=1)] == [newer.id]
    view = public(db, db.get(Sweep, newer.id))  # type: ignore[arg-type]
    assert view.counts == {"queued": 2, "succeeded": 1}
    assert [(m.index, m.params) for m in view.members] == [
        (0, {"lr": 1e-4}),
        (1, {"lr": 2e-4}),
        (2, {"lr": 3e-4}),
    ]
    assert view.members[0].job_id != first.id  # the resumed one
    estimates = [j.estimate_bytes_per_device for j in member_jobs(db, newer.id)]
    assert view.largest_estimate_bytes == max(e for e in estimates if e)
