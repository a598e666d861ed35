"""the scheduler: queued jobs wait without devices; priority, time limits, dependencies, holds,
the `timeout` status and per-user quotas

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 18:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD = "'queued', 'starting', 'running', 'succeeded', 'failed', 'cancelled', 'lost'"
NEW = OLD + ", 'timeout'"


def upgrade() -> None:
    op.add_column("jobs", sa.Column("priority", sa.Integer(), server_default="0", nullable=False))
    # Jobs from before time limits keep running as long as they need (30 days).
    op.add_column(
        "jobs", sa.Column("time_limit_s", sa.Integer(), server_default="2592000", nullable=False)
    )
    op.add_column(
        "jobs",
        sa.Column(
            "depends_on",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default="[]",
            nullable=False,
        ),
    )
    op.add_column(
        "jobs", sa.Column("preemptible", sa.Boolean(), server_default="false", nullable=False)
    )
    op.add_column("jobs", sa.Column("held", sa.Boolean(), server_default="false", nullable=False))
    op.add_column("jobs", sa.Column("requested_devices", postgresql.JSONB(astext_type=sa.Text())))
    op.drop_constraint("ck_jobs_status", "jobs", type_="check")
    op.create_check_constraint("ck_jobs_status", "jobs", f"status IN ({NEW})")
    op.create_table(
        "user_quotas",
        sa.Column("user_name", sa.String(length=64), nullable=False),
        sa.Column("max_devices", sa.Integer(), nullable=True),
        sa.Column("max_queued_jobs", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("user_name"),
    )


def downgrade() -> None:
    op.drop_table("user_quotas")
    op.execute("UPDATE jobs SET status = 'cancelled' WHERE status = 'timeout'")
    op.drop_constraint("ck_jobs_status", "jobs", type_="check")
    op.create_check_constraint("ck_jobs_status", "jobs", f"status IN ({OLD})")
    for column in ("requested_devices", "held", "preemptible", "depends_on"):
        op.drop_column("jobs", column)
    op.drop_column("jobs", "time_limit_s")
    op.drop_column("jobs", "priority")
