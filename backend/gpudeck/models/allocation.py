from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, ForeignKey, Index, Integer, String, func, text
from sqlalchemy.orm import Mapped, mapped_column

from gpudeck.core.db import Base


class Allocation(Base):
    """A job's hold on one device. The partial unique index is the whole double-booking defence:
    at most one live (unreleased) allocation per device, enforced by Postgres itself."""

    __tablename__ = "allocations"
    __table_args__ = (
        Index(
            "uq_allocations_live_device",
            "node",
            "gpu_uuid",
            unique=True,
            postgresql_where=text("released_at IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    node: Mapped[str] = mapped_column(String(128))
    gpu_uuid: Mapped[str] = mapped_column(String(96))
    gpu_index: Mapped[int] = mapped_column(Integer)
    rank: Mapped[int] = mapped_column(Integer)
    acquired_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now()
    )
    released_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
