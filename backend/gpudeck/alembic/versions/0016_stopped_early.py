"""stopped_early: a sweep member its early-stopping rule ended (it keeps its last checkpoint);
jobs.early_stopped_at marks the stop the rule asked for

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26 05:15:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD = "'queued', 'starting', 'running', 'succeeded', 'failed', 'cancelled', 'lost', 'timeout'"
NEW = OLD + ", 'stopped_early'"


def upgrade() -> None:
    op.add_column("jobs", sa.Column("early_stopped_at", sa.DateTime(timezone=True), nullable=True))
    op.drop_constraint("ck_jobs_status", "jobs", type_="check")
    op.create_check_constraint("ck_jobs_status", "jobs", f"status IN ({NEW})")


def downgrade() -> None:
    op.execute("UPDATE jobs SET status = 'cancelled' WHERE status = 'stopped_early'")
    op.drop_constraint("ck_jobs_status", "jobs", type_="check")
    op.create_check_constraint("ck_jobs_status", "jobs", f"status IN ({OLD})")
    op.drop_column("jobs", "early_stopped_at")
