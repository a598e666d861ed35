"""Ship this node's ranks' log files into Postgres (services/jobs/rank_logs.py), so the API serves
every rank's output whatever machine it ran on, while it runs and after it ends.

A thread per job part: every SHIP_INTERVAL_S it reads each local rank's new whole lines from
its file and stores them as one chunk per rank, in one transaction; an offset advances only
once its chunk is committed. The file is the buffer: while Postgres is down nothing is lost,
the next pass after it returns ships what accumulated (a rank writing faster than the cap
allows skips to its newest output, and the gap is stored as such). Redis plays no part, so a
Redis outage never touches the logs or the job. On close (every rank of the part has exited)
it ships the rest of each file, the last partial line included, marked final.

On a node that does not lead the job, the lines also go on the job's stream as `log` events
(the leader's relay does it for its own ranks), best effort, for the job's WebSocket: the
stored copy is the one that must be complete.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import redis
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.db import transaction
from gpudeck.services.jobs import rank_logs
from gpudeck.services.jobs.rank_logs import Chunk, ShipState
from gpudeck.worker.events import send
from gpudeck.worker.retry import Backoff, store_unreachable

log = logging.getLogger(__name__)
SHIP_INTERVAL_S = 1.0
READ_BYTES = 1024 * 1024  # per rank and pass
EVENT_LINES_PER_PASS = 200
WARN_EVERY_S = 30.0


@dataclass(frozen=True)
class _Planned:
    rank: int
    chunk: Chunk
    next_offset: int
    done: bool  # it reached the end of the file (after the ranks exited: the last chunk)


class LogShipper:
    """start() once the ranks are launched; close() once they have all exited."""

    def __init__(
        self,
        job_id: int,
        node: str,
        run_dir: Path,
        ranks: Sequence[int],
        factory: sessionmaker[Session],
        cap_bytes: int,
        events: redis.Redis | None = None,  # its own client, closed by close()
    ) -> None:
        self.job_id = job_id
        self.node = node
        self.run_dir = run_dir
        self.ranks = ranks
        self.factory = factory
        self.cap_bytes = cap_bytes
        self.events = events
        self._states: dict[int, ShipState] | None = None
        self._closing = threading.Event()
        self._redis_warned_at: float | None = None
        self._thread = threading.Thread(
            target=self._loop, name=f"gpudeck-logs-{job_id}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Ship everything left, waiting for Postgres if it is down (as the runner's other
        writes at the end of a job do)."""
        self._closing.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.events is not None:
            self.events.close()

    def _loop(self) -> None:
        backoff = Backoff()
        outage_since: float | None = None
        while True:
            closing = self._closing.wait(SHIP_INTERVAL_S)
            try:
                left = self.ship(final=closing)
            except Exception as exc:
                if not store_unreachable(exc):
                    log.exception("job %s: could not store its rank logs", self.job_id)
                    if closing:
                        return
                    self._states = None  # read where the stored copy stands again
                    continue
                if outage_since is None:
                    outage_since = time.monotonic()
                    log.warning("job %s: database unreachable; its logs wait in their files",
                                self.job_id)  # fmt: skip
                backoff.wait()
                continue
            if outage_since is not None:
                log.info("job %s: logs stored again after %.1f s", self.job_id,
                         time.monotonic() - outage_since)  # fmt: skip
                outage_since = None
                backoff.reset()
            if closing and not left:
                return

    def ship(self, *, final: bool = False) -> bool:
        """One pass; returns whether a final pass still has output left to ship."""
        states = self._load()
        planned = [p for rank in self.ranks if (p := self._plan(rank, states[rank], final))]
        if planned:
            with transaction(self.factory) as session:
                for p in planned:
                    rank_logs.add_chunk(session, self.job_id, p.rank, p.chunk)
            for p in planned:
                state = states[p.rank]
                state.next_seq, state.offset = p.chunk.seq + 1, p.next_offset
                state.cap.add(p.chunk.seq, len(p.chunk.data))
            self._evict(states)
            self._publish(planned)
        return final and any(not p.done for p in planned)

    def _load(self) -> dict[int, ShipState]:
        if self._states is None:
            with transaction(self.factory) as session:
                self._states = {
                    rank: rank_logs.ship_state(
                        session, self.job_id, rank, self.node, self.cap_bytes
                    )
                    for rank in self.ranks
                }
        return self._states

    def _plan(self, rank: int, state: ShipState, final: bool) -> _Planned | None:
        path = self.run_dir / f"rank{rank}.log"
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            size = 0
        start = state.offset if state.offset <= size else 0  # a file made anew
        skip = size - start - state.cap.tail_room
        if state.cap.head_closed and skip > 0:
            start += skip  # more than the copy can hold: go to the newest output
            state.cap.close_head()
        limit = READ_BYTES
        if not state.cap.head_closed:  # the start of the log: what fits in the head, kept
            room = state.cap.head_limit - state.cap.head_bytes
            if room > 0:
                limit = min(limit, room)
            else:
                state.cap.close_head()
        data = _read(path, start, min(limit, size - start))
        if start > state.offset and (newline := data.find(b"\n")) >= 0:
            start, data = start + newline + 1, data[newline + 1 :]  # from a line's start
        done = start + len(data) >= size
        if not (final and done):
            cut = data.rfind(b"\n") + 1
            if not cut and len(data) == limit < READ_BYTES:
                state.cap.close_head()  # the next line does not fit in the head: it is full
            if cut or len(data) < READ_BYTES:  # a line longer than a read goes as it is
                data = data[:cut]
                done = False
        if not data and not (final and done):
            return None
        chunk = Chunk(state.next_seq, self.node, start, data, final=final and done)
        return _Planned(rank, chunk, start + len(data), done)

    def _evict(self, states: dict[int, ShipState]) -> None:
        """Drop the oldest stored output above the cap. A failed delete is tried again on the
        next pass (nothing is forgotten until it is gone)."""
        doomed = {rank: s.cap.to_evict() for rank, s in states.items()}
        doomed = {rank: seqs for rank, seqs in doomed.items() if seqs}
        if not doomed:
            return
        try:
            with transaction(self.factory) as session:
                for rank, seqs in doomed.items():
                    rank_logs.drop_chunks(session, self.job_id, rank, seqs)
        except Exception as exc:
            if not store_unreachable(exc):
                raise
            return
        for rank, seqs in doomed.items():
            states[rank].cap.evicted(len(seqs))

    def _publish(self, planned: list[_Planned]) -> None:
        if self.events is None:
            return
        try:
            pipe = self.events.pipeline(transaction=False)  # one round trip a pass
            for p in planned:
                lines = p.chunk.data.decode(errors="replace").splitlines()
                for line in lines[-EVENT_LINES_PER_PASS:]:
                    data = {"message": line, "rank": p.rank, "source": "output"}
                    send(pipe, self.job_id, "log", data)
            pipe.execute()
        except redis.RedisError as exc:
            now = time.monotonic()
            if self._redis_warned_at is None or now - self._redis_warned_at >= WARN_EVERY_S:
                log.warning("job %s: log lines not sent to its stream: %s", self.job_id, exc)
                self._redis_warned_at = now


def ship_leftovers(
    factory: sessionmaker[Session], data_dir: Path, node: str, cap_bytes: int, skip: set[int]
) -> None:
    """At worker start: the end of each log that a killed worker of this node left unshipped
    (its ranks died with it, so the files are complete), marked final. Jobs in `skip` are
    running here again and ship their own."""
    with transaction(factory) as session:
        leftovers = rank_logs.unfinished(session, node)
    for job_id, ranks in leftovers.items():
        if job_id in skip:
            continue
        run_dir = data_dir / "jobs" / str(job_id)
        shipper = LogShipper(job_id, node, run_dir, sorted(ranks), factory, cap_bytes)
        try:
            while shipper.ship(final=True):
                pass
        except Exception:
            log.exception("job %s: could not store the end of its rank logs", job_id)
            continue
        log.info("job %s: stored the end of its rank logs %s, left by a worker that died",
                 job_id, sorted(ranks))  # fmt: skip


def _read(path: Path, start: int, count: int) -> bytes:
    if count <= 0:
        return b""
    try:
        with path.open("rb") as fh:
            fh.seek(start)
            return fh.read(count)
    except FileNotFoundError:
        return b""
