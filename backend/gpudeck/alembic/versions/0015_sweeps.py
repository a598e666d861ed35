"""Sweeps: many jobs from one spec; each member job knows its sweep and its parameter values

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26 05:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "sweeps",
        sa.Column("id", sa.BigInteger(), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("spec", postgresql.JSONB(), nullable=False),
        sa.Column("max_parallel", sa.Integer(), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
    )
    op.add_column(
        "jobs",
        sa.Column("sweep_id", sa.BigInteger(), sa.ForeignKey("sweeps.id"), nullable=True),
    )
    op.add_column("jobs", sa.Column("sweep_index", sa.Integer(), nullable=True))
    op.add_column("jobs", sa.Column("sweep_params", postgresql.JSONB(), nullable=True))
    op.create_index("ix_jobs_sweep_id", "jobs", ["sweep_id"])


def downgrade() -> None:
    op.drop_index("ix_jobs_sweep_id", table_name="jobs")
    op.drop_column("jobs", "sweep_params")
    op.drop_column("jobs", "sweep_index")
    op.drop_column("jobs", "sweep_id")
    op.drop_table("sweeps")
