from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, ForeignKey, Integer, String, Text, func
from sqlalchemy.orm import Mapped, mapped_column

from gpudeck.core.db import Base


class JobNode(Base):
    """One node's part of a job that spans nodes (a single-node job has no rows here).

    Written when the first node (node rank 0, `jobs.node`) claims the job. Each node's worker
    renews its own `heartbeat_at`: the reaper takes the whole job as lost when any node's part
    stops beating, not only when the first node's does. Node rank 0's row carries the
    rendezvous endpoint (`address`, `port`) the other nodes wait for."""

    __tablename__ = "job_nodes"

    job_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True
    )
    node: Mapped[str] = mapped_column(String(128), primary_key=True)
    node_rank: Mapped[int] = mapped_column(Integer)
    rank_offset: Mapped[int] = mapped_column(Integer)  # the global rank of its first rank
    local_world_size: Mapped[int] = mapped_column(Integer)
    address: Mapped[str | None] = mapped_column(String(255))
    port: Mapped[int | None] = mapped_column(Integer)
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    heartbeat_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now()
    )
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    outcome: Mapped[str | None] = mapped_column(String(16))  # that node's own end
    # A failed part's error while the job waits for the real cause (multinode.finish_part).
    error: Mapped[str | None] = mapped_column(Text)
