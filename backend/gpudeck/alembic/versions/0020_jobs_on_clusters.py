"""jobs on clusters: a job may run on a Slurm cluster instead of GPUDeck's own nodes (issue 35):
the cluster it runs on, Slurm's id for it, Slurm's last word on it (state, pending reason, the
cause when Slurm did not answer), and the interpreter the cluster's compute nodes run ranks with

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27 19:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("clusters", sa.Column("python", sa.Text(), nullable=True))
    # RESTRICT: a cluster that jobs ran on stays while they are kept (their logs name it).
    op.add_column(
        "jobs",
        sa.Column(
            "cluster_id",
            sa.BigInteger(),
            sa.ForeignKey("clusters.id", ondelete="RESTRICT"),
            nullable=True,
        ),
    )
    op.add_column("jobs", sa.Column("slurm_job_id", sa.String(32), nullable=True))
    op.add_column("jobs", sa.Column("slurm", postgresql.JSONB(), nullable=True))
    # The poll reads a cluster's live jobs: few rows among many ended ones.
    op.create_index(
        "ix_jobs_cluster_live",
        "jobs",
        ["cluster_id"],
        postgresql_where=sa.text(
            "cluster_id IS NOT NULL AND status IN ('queued', 'starting', 'running')"
        ),
    )


def downgrade() -> None:
    op.drop_index("ix_jobs_cluster_live", table_name="jobs")
    op.drop_column("jobs", "slurm")
    op.drop_column("jobs", "slurm_job_id")
    op.drop_column("jobs", "cluster_id")
    op.drop_column("clusters", "python")
