"""The warm-up's work (services/warm_up.py): each kind's code resolved, a broken kind reported
by name without stopping the others; and the token and submit paths run for their compiled
statements while finding and writing nothing: no token's last use moves, no job is placed or
changed, and the submit path's reads send no write, on an empty cluster as on a busy one."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
from harness import create_token, make_job, statements_run
from pydantic import BaseModel
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from gpudeck.engine.kinds import JobKind
from gpudeck.models import Allocation, Job, JobStatus
from gpudeck.services import warm_up

PROBE = "gpudeck_warm_up_probe"  # a module only this test writes, imported by the warm-up


class _Config(BaseModel):
    pass


def _kind(name: str, estimate_memory: str) -> JobKind:
    return JobKind(
        name=name,
        description=name,
        config_model=_Config,
        train="x:y",
        estimate_memory=estimate_memory,
    )


def test_each_kinds_code_is_imported_and_a_broken_one_is_reported_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / f"{PROBE}.py").write_text("def estimate(*args):\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, PROBE, raising=False)
    kinds = {
        "missing": _kind("missing", "gpudeck_no_such_module:estimate"),
        "misnamed": _kind("misnamed", f"{PROBE}:no_such_function"),
        "good": _kind("good", f"{PROBE}:estimate"),
    }
    monkeypatch.setattr(warm_up, "registry", lambda: kinds)
    with caplog.at_level(logging.WARNING, logger=warm_up.__name__):
        warm_up.import_kind_code()  # never raises: the first use reports a broken kind
    assert PROBE in sys.modules  # the good kind's code was imported after the broken ones
    reported = [r.getMessage() for r in caplog.records]
    assert reported == [
        "kind 'missing': resolve_estimate failed at warm-up",
        "kind 'misnamed': resolve_estimate failed at warm-up",
    ]


def test_the_token_path_finds_no_token_and_moves_no_last_use(db: Session) -> None:
    create_token(db, "user", name="alice")
    used = text("SELECT id, last_used_at FROM api_tokens ORDER BY id")
    before = db.execute(used).all()
    warm_up.token_path(db)
    db.commit()  # committed, not rolled back: what it would have written is kept
    assert db.execute(used).all() == before


def test_the_submit_path_reads_on_a_busy_cluster_write_nothing(db: Session, devices: str) -> None:
    running = make_job(db, devices=[0, 1])
    waiting = make_job(db, count=2)
    # Its devices given back unstarted: it waits with six devices free, so a pass would start it.
    db.execute(text("DELETE FROM allocations WHERE job_id = :id"), {"id": waiting.id})
    db.commit()
    with statements_run(db.get_bind()) as statements:
        warm_up.read_submit_path(db, half_life_s=3600)
    db.commit()
    assert statements and all(s.lstrip().upper().startswith("SELECT") for s in statements)
    held = db.scalars(select(Allocation.job_id).where(Allocation.released_at.is_(None))).all()
    assert sorted(held) == [running.id, running.id]  # the waiting job was planned, not placed
    assert db.get(Job, waiting.id).status == JobStatus.queued  # type: ignore[union-attr]


def test_the_submit_path_reads_run_on_a_cluster_with_no_node(db: Session) -> None:
    with statements_run(db.get_bind()) as statements:
        warm_up.read_submit_path(db, half_life_s=3600)  # no node: refused, and swallowed
    # The quota read and the pass's read of the queue ran after the placement's refusal.
    assert any("FROM user_quotas" in s for s in statements)
    assert any("FROM jobs" in s for s in statements)
    assert db.scalar(text("SELECT count(*) FROM jobs")) == 0


def test_with_no_kind_there_is_no_submit_path_to_read(
    db: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warm_up, "registry", dict)
    with statements_run(db.get_bind()) as statements:
        warm_up.read_submit_path(db, half_life_s=3600)
    assert statements == []
