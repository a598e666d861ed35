"""clusters.gpu_memory: each GRES type's memory (Slurm does not know it), so a submit refuses a
job whose estimate fits no type of its partition and asks Slurm for a type that fits (issue 35)

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-27 20:35:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "clusters",
        sa.Column("gpu_memory", postgresql.JSONB(), server_default="{}", nullable=False),
    )


def downgrade() -> None:
    op.drop_column("clusters", "gpu_memory")
