"""jobs.dispatched_at: the outbox of job dispatch

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 10:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("dispatched_at", sa.DateTime(timezone=True), nullable=True))
    # Jobs dispatched before this column existed are not sent again.
    op.execute("UPDATE jobs SET dispatched_at = created_at WHERE status <> 'queued'")


def downgrade() -> None:
    op.drop_column("jobs", "dispatched_at")
