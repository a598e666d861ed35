"""The stored copy of every rank's log (table `job_log_chunks`), for ranks whose log file is not
on the API's machine: each node's worker ships its ranks' new lines here as they are written
(worker/log_shipper.py), and the API reads them back (api/routes/job_runs.py).

Why Postgres, and chunks written as the rank writes: it is the one store every part already
shares durably, so one copy serves a live rank and a finished one alike, an API that restarts
finds every line, and a Redis outage does not touch it. The rank's file is the shipper's
buffer: a chunk the database did not take is read again from the file later, so an outage
loses nothing while the file stays.

The copy is capped per rank (`GPUDECK_LOG_STORE_BYTES`): the first quarter of the cap keeps the
start of the log, the rest the newest output; what falls between is dropped and a line in its
place says how much. Takes a Session, never commits.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import islice

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from gpudeck.models import Job, JobLogChunk
from gpudeck.services.jobs import state as job_state

LEFTOVER_WINDOW = timedelta(days=1)  # how far back a restarted worker looks for them
TAIL_PAGE = 256  # chunks read at a time, newest first, for a tail
HEAD_FRACTION = 4  # the head keeps 1/HEAD_FRACTION of the cap


@dataclass(frozen=True)
class Chunk:
    seq: int
    node: str
    start_byte: int
    data: bytes
    final: bool = False

    @property
    def end_byte(self) -> int:
        return self.start_byte + len(self.data)


@dataclass
class Cap:
    """What a rank's stored copy holds, and what to drop to keep it under `cap_bytes`: the
    leading chunks up to a quarter of the cap are its head and stay; the others go oldest
    first."""

    cap_bytes: int
    stored_bytes: int = 0
    head_bytes: int = 0
    head_closed: bool = False
    tail: deque[tuple[int, int]] = field(default_factory=deque)  # (seq, size), oldest first

    @property
    def head_limit(self) -> int:
        return self.cap_bytes // HEAD_FRACTION

    @property
    def tail_room(self) -> int:
        """How much of the newest output the copy can hold beyond its head."""
        return self.cap_bytes - self.head_bytes

    def add(self, seq: int, size: int) -> None:
        self.stored_bytes += size
        if not self.head_closed and self.head_bytes + size <= self.head_limit:
            self.head_bytes += size
        else:
            self.head_closed = True
            self.tail.append((seq, size))

    def close_head(self) -> None:
        """Output was skipped: what follows is no longer the start of the log."""
        self.head_closed = True

    def to_evict(self) -> list[int]:
        """The chunks to delete, oldest first, so the copy fits the cap again (nothing changes
        until evicted() says they are gone)."""
        dropped, stored = [], self.stored_bytes
        for seq, size in islice(self.tail, max(0, len(self.tail) - 1)):  # the newest stays
            if stored <= self.cap_bytes:
                break
            stored -= size
            dropped.append(seq)
        return dropped

    def evicted(self, count: int) -> None:
        for _ in range(count):
            _, size = self.tail.popleft()
            self.stored_bytes -= size


@dataclass
class ShipState:
    """Where a node's shipper of one rank stands: the next chunk's number, the byte of the
    rank's file it has shipped up to, and the cap's account."""

    next_seq: int
    offset: int
    cap: Cap


def ship_state(session: Session, job_id: int, rank: int, node: str, cap_bytes: int) -> ShipState:
    """Resume from what is stored (a preempted job runs again; its file grows on): the offset
    continues only from this node's own last chunk, the file it was read from."""
    rows = session.execute(
        select(
            JobLogChunk.seq,
            JobLogChunk.node,
            JobLogChunk.start_byte,
            func.length(JobLogChunk.data),
        )
        .where(JobLogChunk.job_id == job_id, JobLogChunk.rank == rank)
        .order_by(JobLogChunk.seq)
    ).all()
    cap = Cap(cap_bytes)
    previous_end: int | None = None
    for seq, _, start, size in rows:
        if previous_end is not None and start != previous_end:
            cap.close_head()
        cap.add(seq, int(size))
        previous_end = start + int(size)
    if not rows:
        return ShipState(0, 0, cap)
    last_seq, last_node, last_start, last_size = rows[-1]
    cap.close_head()  # a new run's output is never the start of the log
    offset = last_start + int(last_size) if last_node == node else 0
    return ShipState(last_seq + 1, offset, cap)


def unfinished(session: Session, node: str) -> dict[int, list[int]]:
    """Ranks of this node, by job, whose last stored chunk is not final although the job has
    ended: their worker died before it shipped the end of their logs (its ranks died with it,
    so their files are whole). Only jobs that ended within LEFTOVER_WINDOW are looked at."""
    terminal = [s.value for s in job_state.TERMINAL]
    c = JobLogChunk
    last = (
        select(c.job_id, c.rank, func.max(c.seq).label("seq"))
        .join(Job, Job.id == c.job_id)
        .where(Job.status.in_(terminal), Job.finished_at > func.now() - LEFTOVER_WINDOW)
        .group_by(c.job_id, c.rank)
        .subquery()
    )
    rows = session.execute(
        select(c.job_id, c.rank)
        .join(last, (last.c.job_id == c.job_id) & (last.c.rank == c.rank) & (last.c.seq == c.seq))
        .where(c.node == node, c.final.is_(False))
    )
    found: dict[int, list[int]] = {}
    for job_id, rank in rows:
        found.setdefault(job_id, []).append(rank)
    return found


def add_chunk(session: Session, job_id: int, rank: int, chunk: Chunk) -> None:
    session.add(
        JobLogChunk(
            job_id=job_id,
            rank=rank,
            seq=chunk.seq,
            node=chunk.node,
            start_byte=chunk.start_byte,
            data=chunk.data,
            final=chunk.final,
        )
    )


def drop_chunks(session: Session, job_id: int, rank: int, seqs: Sequence[int]) -> None:
    if seqs:
        session.execute(
            delete(JobLogChunk).where(
                JobLogChunk.job_id == job_id,
                JobLogChunk.rank == rank,
                JobLogChunk.seq.in_(list(seqs)),
            )
        )


def _chunks(rows: Iterable[JobLogChunk]) -> list[Chunk]:
    return [Chunk(r.seq, r.node, r.start_byte, bytes(r.data), r.final) for r in rows]


def chunks_after(
    session: Session, job_id: int, rank: int, after_seq: int, limit: int = TAIL_PAGE
) -> list[Chunk]:
    """Chunks newer than `after_seq`, in order."""
    rows = session.scalars(
        select(JobLogChunk)
        .where(JobLogChunk.job_id == job_id, JobLogChunk.rank == rank, JobLogChunk.seq > after_seq)
        .order_by(JobLogChunk.seq)
        .limit(limit)
    )
    return _chunks(rows)


def _newest_ends(
    session: Session, job_id: int, rank: int, before: int | None, limit: int, most: int
) -> list[Chunk]:
    """Up to `limit` chunks older than `before`, newest first, each cut to its last `most`
    bytes (where a cut one starts moves on with it): a tail never reads a whole megabyte chunk
    for its last lines."""
    full = func.length(JobLogChunk.data)
    kept = func.substring(JobLogChunk.data, func.greatest(1, full - most + 1))
    query = select(
        JobLogChunk.seq, JobLogChunk.node, JobLogChunk.start_byte, full, kept, JobLogChunk.final
    ).where(JobLogChunk.job_id == job_id, JobLogChunk.rank == rank)
    if before is not None:
        query = query.where(JobLogChunk.seq < before)
    rows = session.execute(query.order_by(JobLogChunk.seq.desc()).limit(limit))
    return [
        Chunk(seq, node, start + length - len(data), bytes(data), final)
        for seq, node, start, length, data, final in rows
    ]


def tail_chunks(session: Session, job_id: int, rank: int, lines: int, budget: int) -> list[Chunk]:
    """The newest chunks, in order, enough to hold the last `lines` lines (or `budget`
    bytes, whichever comes first)."""
    found: list[Chunk] = []
    newlines = size = 0
    before: int | None = None
    # Pages grow from 2 chunks: a chunk of a fast-printing rank holds thousands of lines, and a
    # first page of TAIL_PAGE read megabytes for a tail of 100 (560 ms: bench/log_flood.py).
    limit = 2
    while newlines <= lines and size < budget:
        page = _newest_ends(session, job_id, rank, before, limit, budget - size)
        for chunk in page:
            found.append(chunk)
            newlines += chunk.data.count(b"\n")
            size += len(chunk.data)
            if newlines > lines or size >= budget:
                break
        if len(page) < limit:
            break
        before = page[-1].seq
        limit = min(2 * limit, TAIL_PAGE)
    return found[::-1]


def gap_line(job_id: int, rank: int, node: str, skipped: int) -> bytes:
    return (
        f"[gpudeck: {_size(skipped)} of this rank's output were not kept: the stored copy of a "
        f"log keeps its start and its newest output (GPUDECK_LOG_STORE_BYTES); the whole log "
        f"is jobs/{job_id}/rank{rank}.log on node {node}]\n"
    ).encode()


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024 or unit == "GiB":
            break
    return f"{value:.1f} {unit}"


@dataclass
class Reader:
    """Turns a rank's chunks, in order, into its text: a line in place of every gap."""

    job_id: int
    rank: int
    last_seq: int = -1
    last: Chunk | None = None

    def feed(self, chunks: Iterable[Chunk]) -> bytes:
        out = bytearray()
        for chunk in chunks:
            previous = self.last
            if previous is not None and previous.node == chunk.node:
                skipped = chunk.start_byte - previous.end_byte
                if skipped > 0:
                    if out and not out.endswith(b"\n"):
                        out += b"\n"
                    out += gap_line(self.job_id, self.rank, chunk.node, skipped)
            out += chunk.data
            self.last, self.last_seq = chunk, chunk.seq
        return bytes(out)

    @property
    def ended(self) -> bool:
        """The rank's node shipped its last chunk (the rank's run there is over)."""
        return self.last is not None and self.last.final
