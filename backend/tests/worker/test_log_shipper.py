"""A node's worker stores its ranks' logs in Postgres: whole lines while the rank runs, the rest
(a last partial line too) when it ends; a database outage loses nothing (the file is the
buffer); Redis plays no part; a huge log keeps its start and its newest output, and the gap
is stated."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from harness import make_job
from sqlalchemy import func, select, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.db import make_engine, make_sessionmaker
from gpudeck.models import JobLogChunk, JobStatus
from gpudeck.services.jobs import rank_logs
from gpudeck.worker.log_shipper import LogShipper, ship_leftovers

CAP = 16 * 1024 * 1024


def stored_text(db: Session, job_id: int, rank: int) -> str:
    db.expire_all()
    chunks = rank_logs.chunks_after(db, job_id, rank, -1, limit=1_000_000)
    return rank_logs.Reader(job_id, rank).feed(chunks).decode()


def shipper(factory: sessionmaker[Session], job_id: int, run_dir: Path, **kw: object) -> LogShipper:
    options: dict[str, object] = {"cap_bytes": CAP, **kw}
    return LogShipper(job_id, "node-b", run_dir, range(2, 4), factory, **options)  # type: ignore[arg-type]


def test_whole_lines_while_running_and_the_rest_at_the_end(
    db: Session, session_factory: sessionmaker[Session], devices: str, tmp_path: Path
) -> None:
    job = make_job(db, devices=[0, 1, 2, 3])
    (tmp_path / "rank2.log").write_text("starting\nstep 1: loss=0.5\nhalf a li")
    ship = shipper(session_factory, job.id, tmp_path)
    ship.ship()
    assert stored_text(db, job.id, 2) == "starting\nstep 1: loss=0.5\n"  # whole lines only
    assert stored_text(db, job.id, 3) == ""  # rank 3 has written nothing yet
    ship.ship()  # nothing new: no empty chunk
    assert db.scalar(select(func.count()).select_from(JobLogChunk)) == 1
    with (tmp_path / "rank2.log").open("a") as fh:
        fh.write("ne\nTraceback: the end")
    (tmp_path / "rank3.log").write_text("rank 3 here\n")
    assert ship.ship(final=True) is False  # all of it in one pass
    assert stored_text(db, job.id, 2) == (
        "starting\nstep 1: loss=0.5\nhalf a line\nTraceback: the end"
    )
    assert stored_text(db, job.id, 3) == "rank 3 here\n"
    finals = db.scalars(select(JobLogChunk.rank).where(JobLogChunk.final)).all()
    assert sorted(finals) == [2, 3]


def test_a_database_outage_loses_no_line_and_redis_plays_no_part(
    db: Session, session_factory: sessionmaker[Session], devices: str, tmp_path: Path
) -> None:
    job = make_job(db, devices=[0, 1, 2, 3])
    log = tmp_path / "rank2.log"
    log.write_text("one\n")
    # The stream's Redis is unreachable: the lines are stored all the same.
    nowhere_redis = redis.Redis(host="127.0.0.1", port=9, socket_connect_timeout=0.2)
    ship = shipper(session_factory, job.id, tmp_path, events=nowhere_redis)
    ship.ship()
    nowhere = make_engine("postgresql+psycopg://postgres@127.0.0.1:9/none", pool_size=1)
    ship.factory = make_sessionmaker(nowhere)  # the database goes away
    with log.open("a") as fh:
        fh.write("two\nthree\n")
    with pytest.raises(OperationalError):
        ship.ship()
    ship.factory = session_factory  # and comes back
    with log.open("a") as fh:
        fh.write("four\n")
    ship.ship(final=True)
    assert stored_text(db, job.id, 2) == "one\ntwo\nthree\nfour\n"  # each line once
    nowhere.dispose()


def test_a_new_run_of_the_rank_on_the_same_node_goes_on_where_the_last_stopped(
    db: Session, session_factory: sessionmaker[Session], devices: str, tmp_path: Path
) -> None:
    job = make_job(db, devices=[0, 1, 2, 3])
    log = tmp_path / "rank2.log"
    log.write_text("first run\n")
    shipper(session_factory, job.id, tmp_path).ship(final=True)
    with log.open("a") as fh:  # preempted, then resumed: the rank appends to its file
        fh.write("second run\n")
    shipper(session_factory, job.id, tmp_path).ship(final=True)
    assert stored_text(db, job.id, 2) == "first run\nsecond run\n"


def test_a_huge_log_keeps_its_start_and_newest_output_and_says_what_is_missing(
    db: Session, session_factory: sessionmaker[Session], devices: str, tmp_path: Path
) -> None:
    job = make_job(db, devices=[0, 1, 2, 3])
    cap = 64 * 1024
    log = tmp_path / "rank2.log"
    ship = shipper(session_factory, job.id, tmp_path, cap_bytes=cap)
    lines = [f"line {i:07d} " + "x" * 80 + "\n" for i in range(20_000)]  # ~1.8 MiB
    for start in range(0, len(lines), 2_000):  # written while the shipper ships
        with log.open("a") as fh:
            fh.writelines(lines[start : start + 2_000])
        ship.ship()
    ship.ship(final=True)
    db.expire_all()
    stored = db.scalar(
        select(func.sum(func.length(JobLogChunk.data))).where(JobLogChunk.job_id == job.id)
    )
    assert stored is not None and stored <= cap
    text = stored_text(db, job.id, 2)
    assert text.startswith(lines[0])  # the start of the log stays
    assert text.endswith(lines[-1])  # and its newest output
    assert "of this rank's output were not kept" in text  # the gap is said, on a line
    assert f"jobs/{job.id}/rank2.log on node node-b" in text
    kept = [line + "\n" for line in text.splitlines() if line.startswith("line ")]
    known = set(lines)
    assert [line for line in kept if line not in known] == []  # never half a line
    assert kept == sorted(kept)


def test_the_end_a_killed_worker_left_unshipped_is_stored_once_its_job_has_ended(
    db: Session, session_factory: sessionmaker[Session], devices: str, tmp_path: Path
) -> None:
    ended = make_job(db, devices=[0, 1, 2, 3])
    running = make_job(db, devices=[4, 5, 6, 7], status=JobStatus.running)
    for job in (ended, running):
        run_dir = tmp_path / "jobs" / str(job.id)
        run_dir.mkdir(parents=True)
        (run_dir / "rank2.log").write_text("shipped\n")
        shipper(session_factory, job.id, run_dir).ship()  # then the worker is killed
        with (run_dir / "rank2.log").open("a") as fh:
            fh.write("never shipped by the dead worker\nits last wo")
    db.execute(
        text("UPDATE jobs SET status = 'lost', finished_at = now() WHERE id = :id"),
        {"id": ended.id},
    )
    db.commit()
    ship_leftovers(session_factory, tmp_path, "node-a", CAP, skip=set())  # another node's
    assert stored_text(db, ended.id, 2) == "shipped\n"
    ship_leftovers(session_factory, tmp_path, "node-b", CAP, skip=set())
    assert stored_text(db, ended.id, 2) == "shipped\nnever shipped by the dead worker\nits last wo"
    assert stored_text(db, running.id, 2) == "shipped\n"  # its runner still ships it
    final = select(JobLogChunk.final).where(JobLogChunk.job_id == ended.id)
    assert db.scalars(final.order_by(JobLogChunk.seq.desc())).first() is True
    ship_leftovers(session_factory, tmp_path, "node-b", CAP, skip=set())  # nothing left to do
    assert stored_text(db, ended.id, 2).count("its last wo") == 1
