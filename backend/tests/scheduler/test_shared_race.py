"""Acceptance 1 of issue 37: 30 trials of 8 jobs that share by memory, submitted at once (a
thread and a session each) onto 2 simulated devices with room for 3 each. The reservations on a
device never exceed its usable memory, read from the table while the submits race; whatever
the order, 6 are placed and the 2 that do not fit wait with the memory they are short of.
Six name their device (only the trigger stands between them), two ask for a count."""

from __future__ import annotations

import threading
from collections import Counter

from harness import TEST_NODE, register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.db import transaction
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.placement.recommend import usable_when_idle
from gpudeck.services.queue.passes import run_pass, start
from gpudeck.services.submit import submission

GiB = 1024**3
TRIALS = 30
JOBS = 8
SHARE = 2 * GiB + 500 * 1024**2  # its declared memory + the CUDA context reserve
USABLE = usable_when_idle(8 * GiB)  # 7.5 GiB: three shares, not four
LIVE_SUMS = text(
    "SELECT gpu_index, sum(reserved_bytes), count(*) FILTER (WHERE reserved_bytes IS NULL) "
    "FROM allocations WHERE released_at IS NULL GROUP BY gpu_index"
)


def _spec(i: int) -> JobCreate:
    config = {"entrypoint": "train.py", "memory_per_device_bytes": 2 * GiB}
    where: dict[str, object] = (
        {"devices": [{"index": i % 2, "node": TEST_NODE}]}
        if i < 6
        else {"count": 1, "node": TEST_NODE}
    )
    return JobCreate(kind="script", config=config, share="memory", **where)  # type: ignore[arg-type]


class Watch:
    """Reads the live reservations per device over and over while the submits race."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions
        self.most: Counter[int] = Counter()
        self.reads = 0
        self.mixed = 0  # reads where a device held an exclusive and a shared allocation
        self.stop = threading.Event()

    def run(self) -> None:
        with self.sessions() as session:
            while not self.stop.is_set():
                for index, total, whole in session.execute(LIVE_SUMS):
                    self.most[index] = max(self.most[index], int(total or 0))
                    self.mixed += bool(whole and total)
                session.rollback()  # a fresh snapshot for the next read
                self.reads += 1


def _trial(sessions: sessionmaker[Session]) -> tuple[Watch, list[int]]:
    barrier = threading.Barrier(JOBS)
    ids: list[int] = []

    def submit(i: int) -> None:
        with transaction(sessions) as session:
            barrier.wait()
            ids.append(submission.create_job(session, _spec(i), owner="ada").id)

    watch = Watch(sessions)
    watcher = threading.Thread(target=watch.run)
    watcher.start()
    threads = [threading.Thread(target=submit, args=(i,)) for i in range(JOBS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    watch.stop.set()
    watcher.join()
    return watch, ids


def test_racing_shared_submits_never_over_reserve_and_the_rest_wait_for_memory(
    db: Session, session_factory: sessionmaker[Session]
) -> None:
    register_devices(db, "2x8GiB")
    db.execute(text("UPDATE nodes SET share_memory = true"))
    db.commit()
    reads = 0
    for _ in range(TRIALS):
        watch, ids = _trial(session_factory)
        reads += watch.reads
        assert len(ids) == JOBS
        assert max(watch.most.values()) <= USABLE and watch.mixed == 0
        with transaction(session_factory) as session:  # the scheduler's pass places the rest
            for decision in run_pass(session, None, half_life_s=3600).plan.starts:
                start(session, decision)
        with transaction(session_factory) as session:
            per_device = {i: (int(t), w) for i, t, w in session.execute(LIVE_SUMS)}
            assert per_device == {0: (3 * SHARE, 0), 1: (3 * SHARE, 0)}
            infos = run_pass(session, None, half_life_s=3600).plan.infos
            assert len(infos) == 2, infos
            for info in infos.values():
                assert info.reason_code == "insufficient_memory"
                assert "0.0 GiB free of reservations, needs 2.5 GiB" in info.reason
            session.execute(text("UPDATE allocations SET released_at = now()"))
            session.execute(text("UPDATE jobs SET status = 'cancelled'"))
    assert reads >= TRIALS  # the table was read during every trial's race
