"""A tail of the stored copy reads only the end of the newest chunks: a fast-printing rank's
chunks are a megabyte each, and reading whole pages of them for 100 lines took the log route
560 ms at p99 during a flood (bench/log_flood.py)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.jobs import rank_logs
from gpudeck.services.jobs.rank_logs import Chunk, Reader
from gpudeck.services.submit import submission

LINE = 100  # bytes per line, newline included
PER_CHUNK = 10_000  # lines: a chunk of about 1 MB


def line(n: int) -> bytes:
    return f"line {n:012d} ".ljust(LINE - 1, "x").encode() + b"\n"


def test_a_tail_reads_the_end_of_the_newest_chunks_and_follows_on_from_them(
    db: Session, devices: str
) -> None:
    spec = JobCreate.model_validate({"kind": "sae", "config": {"steps": 10}, "count": 1})
    job = submission.create_job(db, spec, owner="tester")
    start = 0
    for seq in range(3):
        data = b"".join(line(n) for n in range(seq * PER_CHUNK, (seq + 1) * PER_CHUNK))
        rank_logs.add_chunk(db, job.id, 0, Chunk(seq, "vm", start, data))
        start += len(data)
    # The last chunk is small: the tail takes its whole and the end of the one before.
    rank_logs.add_chunk(db, job.id, 0, Chunk(3, "vm", start, line(30_000) + line(30_001)))
    db.flush()

    chunks = rank_logs.tail_chunks(db, job.id, 0, lines=100, budget=64 * 1024)
    fetched = sum(len(c.data) for c in chunks)
    assert fetched <= 2 * 64 * 1024, fetched  # not the 3 MB the chunks hold
    reader = Reader(job.id, 0)
    text = reader.feed(chunks)
    last = text.splitlines(keepends=True)[-100:]
    assert last == [line(n) for n in range(29_902, 30_002)]
    assert b"were not kept" not in text  # a cut chunk is no gap
    assert reader.last_seq == 3 and rank_logs.chunks_after(db, job.id, 0, reader.last_seq) == []
    db.rollback()
