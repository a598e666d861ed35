from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    func,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from gpudeck.core.db import Base


class Allocation(Base):
    """A job's hold on one device: the whole device (`reserved_bytes` NULL, exclusive) or some
    bytes of it (a job sharing the device by memory). Postgres alone decides what may be live
    together: the partial unique index allows one live exclusive allocation per device, and the
    trigger of migration 0021 (under the device row's lock) refuses an exclusive allocation
    beside shared ones, a shared one beside an exclusive one, and shared ones whose bytes
    exceed the device's usable memory (the one safety-margin rule)."""

    __tablename__ = "allocations"
    __table_args__ = (
        Index(
            "uq_allocations_live_device",
            "node",
            "gpu_uuid",
            unique=True,
            postgresql_where=text("released_at IS NULL AND reserved_bytes IS NULL"),
        ),
        CheckConstraint("reserved_bytes > 0", name="ck_allocations_reserved_positive"),
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
    # A shared allocation's bytes on the device (its job's estimate + a CUDA context reserve);
    # None: the whole device.
    reserved_bytes: Mapped[int | None] = mapped_column(BigInteger)
