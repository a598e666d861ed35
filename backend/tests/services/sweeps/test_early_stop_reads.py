"""Early stopping's look (services/sweeps/early_stop.stop_hopeless) with the scheduler's curve
cache:
a second look reads only the metric rows written since the first, and decides as a look
that reads every row."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from harness import make_job
from sqlalchemy import event, text
from sqlalchemy.orm import Session

from gpudeck.models import Sweep
from gpudeck.services.sweeps.early_stop import CurveCache, stop_hopeless

RULE = {"rule": "median", "metric": "mse_loss", "mode": "min", "grace_steps": 40, "min_peers": 3}


@pytest.fixture
def metric_rows_read(db: Session) -> Iterator[list[int]]:
    """The rows each statement on job_metrics returned, in order."""
    counts: list[int] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().startswith("SELECT") and "job_metrics" in statement:
            counts.append(cursor.rowcount)

    engine = db.get_bind()
    event.listen(engine, "after_cursor_execute", count)
    yield counts
    event.remove(engine, "after_cursor_execute", count)


def write(db: Session, job_id: int, steps: range, loss: float) -> None:
    for step in steps:
        db.execute(
            text("INSERT INTO job_metrics (job_id, step, metrics) VALUES (:j, :s, :m)"),
            {"j": job_id, "s": step, "m": json.dumps({"mse_loss": loss, "l0": 4.0})},
        )
    db.commit()


def test_a_second_look_reads_only_the_rows_written_since_the_first(
    db: Session, devices: str, metric_rows_read: list[int]
) -> None:
    sweep = Sweep(name="s", owner="tester", kind="sae", spec={"early_stop": RULE})
    db.add(sweep)
    db.commit()
    jobs = [make_job(db, count=1, queue=True).id for _ in range(5)]
    status = ["succeeded"] * 3 + ["running", "queued"]
    for index, (job_id, state) in enumerate(zip(jobs, status, strict=True)):
        db.execute(
            text(
                "UPDATE jobs SET sweep_id = :s, sweep_index = :i, status = :t,"
                " progress_total = 100 WHERE id = :j"  # the steps each member writes up to
            ),
            {"s": sweep.id, "i": index, "t": state, "j": job_id},
        )
    for job_id, loss in zip(jobs[:3], (1.0, 1.1, 1.2), strict=True):
        write(db, job_id, range(10, 101, 10), loss)  # 10 rows each
    write(db, jobs[3], range(10, 31, 10), 1.5)  # running, within its grace steps

    cache = CurveCache()
    assert stop_hopeless(db, cache) == []
    db.commit()
    assert metric_rows_read == [33]  # everything, once

    write(db, jobs[3], range(40, 61, 10), 1.4)  # three new rows: past its grace, hopeless
    metric_rows_read.clear()
    stops = stop_hopeless(db, cache)
    assert metric_rows_read == [3]  # only the new rows (the ended members' are not read again)
    assert [s.job_id for s in stops] == [jobs[3]] and "worse than the median" in stops[0].reason
    db.rollback()

    metric_rows_read.clear()
    assert [s.job_id for s in stop_hopeless(db)] == [jobs[3]]  # no cache: the same verdict
    assert metric_rows_read == [36]
    db.rollback()
