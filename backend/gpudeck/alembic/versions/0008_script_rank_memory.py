"""jobs.rank_memory: what each rank of a job really used (script jobs: peak host RSS per rank,
and the host memory limit it ran under)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 21:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("rank_memory", JSONB(), nullable=True))


def downgrade() -> None:
    op.drop_column("jobs", "rank_memory")
