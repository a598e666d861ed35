from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, DateTime, ForeignKey, Integer, LargeBinary, String, func
from sqlalchemy.orm import Mapped, mapped_column

from gpudeck.core.db import Base


class JobLogChunk(Base):
    """A piece of one rank's log, shipped by the worker of the node the rank ran on
    (worker/log_shipper.py), so the API serves every rank's output wherever it ran.

    Chunks of a rank are numbered by `seq` in the order they were shipped; `start_byte` is
    where the chunk begins in the rank's file on `node`: a gap between one chunk's end and the
    next one's start is output that was not kept (the stored copy is capped, see
    services/jobs/rank_logs.py), and the API shows it. A chunk with `final` set is the last of its
    run on that node: the rank has ended and its node shipped everything."""

    __tablename__ = "job_log_chunks"

    job_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True
    )
    rank: Mapped[int] = mapped_column(Integer, primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    node: Mapped[str] = mapped_column(String(128))
    start_byte: Mapped[int] = mapped_column(BigInteger)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    final: Mapped[bool] = mapped_column(Boolean, server_default="false")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
