"""The log route serves a rank whose file is on another machine from the copy its node stored,
live (follow) and after the end; a file on the API's machine is still read first."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from harness import make_job
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.api.routes import job_runs
from gpudeck.core.config import Settings
from gpudeck.models import JobStatus
from gpudeck.worker.log_shipper import LogShipper


def other_node(
    factory: sessionmaker[Session], job_id: int, run_dir: Path, ranks: range = range(2, 4)
) -> LogShipper:
    """What node-b's worker runs for its ranks, its files in a directory the API cannot see."""
    run_dir.mkdir(parents=True, exist_ok=True)
    return LogShipper(job_id, "node-b", run_dir, ranks, factory, 16 * 1024 * 1024)


def test_a_rank_on_another_machine_is_served_from_its_stored_copy(
    client: TestClient,
    db: Session,
    session_factory: sessionmaker[Session],
    devices: str,
    tmp_path: Path,
    settings: Settings,
) -> None:
    job = make_job(db, devices=[0, 1, 2, 3], status=JobStatus.succeeded)
    elsewhere = tmp_path / "node-b" / "jobs" / str(job.id)
    ship = other_node(session_factory, job.id, elsewhere)
    (elsewhere / "rank2.log").write_text("".join(f"rank 2 line {i}\n" for i in range(500)))
    ship.ship(final=True)
    assert not (settings.data_dir / "jobs" / str(job.id) / "rank2.log").exists()

    logs = f"/api/jobs/{job.id}/logs"
    answer = client.get(logs, params={"rank": 2})
    assert answer.status_code == 200
    assert answer.text == "".join(f"rank 2 line {i}\n" for i in range(300, 500))  # tail=200
    assert client.get(logs, params={"rank": 2, "tail": 1}).text == "rank 2 line 499\n"
    followed = client.get(logs, params={"rank": 2, "tail": 2, "follow": True})
    assert followed.text == "rank 2 line 498\nrank 2 line 499\n"  # ended: the stream ends
    assert client.get(logs, params={"rank": 3}).text == ""  # it wrote nothing
    assert client.get(logs, params={"rank": 4}).status_code == 422

    # A file on the API's own machine is read first (complete, however long).
    local = settings.data_dir / "jobs" / str(job.id)
    local.mkdir(parents=True)
    (local / "rank2.log").write_text("the local file\n")
    assert client.get(logs, params={"rank": 2}).text == "the local file\n"


def test_following_a_remote_rank_streams_its_lines_until_its_node_has_shipped_the_last(
    client: TestClient,
    db: Session,
    session_factory: sessionmaker[Session],
    devices: str,
    tmp_path: Path,
) -> None:
    job = make_job(db, devices=[0, 1, 2, 3], status=JobStatus.running)
    run_dir = tmp_path / "node-b" / "jobs" / str(job.id)
    ship = other_node(session_factory, job.id, run_dir)
    log = run_dir / "rank3.log"
    log.write_text("before the follow\n")
    ship.ship()

    def rank_runs_on() -> None:
        for i in range(3):
            time.sleep(0.3)
            with log.open("a") as fh:
                fh.write(f"step {i}\n")
            ship.ship()
        with session_factory() as session:  # the job ends before node-b's last lines land
            session.execute(text("UPDATE jobs SET status = 'succeeded' WHERE id = :id"),
                            {"id": job.id})  # fmt: skip
            session.commit()
        time.sleep(1.0)
        with log.open("a") as fh:
            fh.write("the last words, no newline")
        ship.ship(final=True)

    writer = threading.Thread(target=rank_runs_on)
    writer.start()
    followed = client.get(f"/api/jobs/{job.id}/logs", params={"rank": 3, "follow": True})
    writer.join()
    assert followed.text == (
        "before the follow\nstep 0\nstep 1\nstep 2\nthe last words, no newline"
    )


def test_a_follow_ends_after_a_while_when_the_node_never_ships_its_last_lines(
    client: TestClient,
    db: Session,
    session_factory: sessionmaker[Session],
    devices: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(job_runs, "FINAL_WAIT_S", 1.0)
    job = make_job(db, devices=[0, 1, 2, 3], status=JobStatus.lost)  # its node died
    run_dir = tmp_path / "node-b" / "jobs" / str(job.id)
    ship = other_node(session_factory, job.id, run_dir)
    (run_dir / "rank2.log").write_text("shipped before the node died\n")
    ship.ship()
    started = time.monotonic()
    followed = client.get(f"/api/jobs/{job.id}/logs", params={"rank": 2, "follow": True})
    assert followed.text == "shipped before the node died\n"
    assert time.monotonic() - started < 10
