from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, Integer, String, func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from gpudeck.core.db import Base


class Sweep(Base):
    """Many jobs from one spec (docs/sweeps.md). The members are ordinary jobs (`jobs.sweep_id`,
    their index and parameter values); the scheduler starts at most `max_parallel` of them at
    once. `spec` is the request as accepted, for the sweep page and a resubmission."""

    __tablename__ = "sweeps"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    owner: Mapped[str] = mapped_column(String(128))
    kind: Mapped[str] = mapped_column(String(64))
    spec: Mapped[dict[str, Any]] = mapped_column(JSONB)
    max_parallel: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
