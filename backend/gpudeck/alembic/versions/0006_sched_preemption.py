"""preemption: a job's stop request for a higher-priority job, and its run segments

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 21:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("preempt_requested_at", sa.DateTime(timezone=True)))
    op.add_column("jobs", sa.Column("preempted_by_job_id", sa.BigInteger()))
    op.create_table(
        "job_runs",
        sa.Column("id", sa.BigInteger(), primary_key=True),
        sa.Column(
            "job_id",
            sa.BigInteger(),
            sa.ForeignKey("jobs.id", ondelete="CASCADE"),
            index=True,
            nullable=False,
        ),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True)),
        sa.Column("outcome", sa.String(16)),
        sa.Column("reason", sa.Text()),
        sa.Column("last_step", sa.BigInteger()),
    )


def downgrade() -> None:
    op.drop_table("job_runs")
    op.drop_column("jobs", "preempted_by_job_id")
    op.drop_column("jobs", "preempt_requested_at")
