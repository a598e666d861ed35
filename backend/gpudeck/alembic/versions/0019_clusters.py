"""clusters: Slurm clusters an admin connected (issue 35), with the partitions, account, QOS
and shared directory jobs will be submitted with, and how GPUDeck reaches the commands

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27 17:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "clusters",
        sa.Column("id", sa.BigInteger(), primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("partitions", postgresql.ARRAY(sa.String(64)), nullable=False),
        sa.Column("account", sa.String(64), nullable=True),
        sa.Column("qos", sa.String(64), nullable=True),
        sa.Column("shared_dir", sa.Text(), nullable=False),
        sa.Column("access", sa.String(16), server_default="local", nullable=False),
        sa.Column("ssh_host", sa.String(255), nullable=True),
        sa.Column("slurm_conf", sa.Text(), nullable=True),
        sa.Column("created_by", sa.String(128), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.CheckConstraint("kind = 'slurm'", name="ck_clusters_kind"),
        sa.CheckConstraint("access IN ('local', 'ssh')", name="ck_clusters_access"),
        sa.CheckConstraint("cardinality(partitions) >= 1", name="ck_clusters_partitions"),
    )


def downgrade() -> None:
    op.drop_table("clusters")
