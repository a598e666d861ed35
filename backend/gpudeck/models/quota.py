from __future__ import annotations

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from gpudeck.core.db import Base


class UserQuota(Base):
    """An admin's limits for one user (by name, as jobs name their owner); None: unlimited."""

    __tablename__ = "user_quotas"

    user_name: Mapped[str] = mapped_column(String(64), primary_key=True)
    max_devices: Mapped[int | None] = mapped_column(Integer)
    max_queued_jobs: Mapped[int | None] = mapped_column(Integer)
