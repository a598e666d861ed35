"""clusters.answered_at and unreachable_since: when Slurm last answered a read of the cluster's
nodes, and since when it has not, so the board can say "unreachable since ..." whichever API
process or restart made the reads

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-29 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("clusters", sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column(
        "clusters", sa.Column("unreachable_since", sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    op.drop_column("clusters", "unreachable_since")
    op.drop_column("clusters", "answered_at")
