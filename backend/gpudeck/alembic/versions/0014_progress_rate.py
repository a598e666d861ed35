"""A running job's measured rate (steps a second over its current run), for expected starts
that use what is known instead of the whole time limit

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 04:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("progress_rate", sa.Float(), nullable=True))


def downgrade() -> None:
    op.drop_column("jobs", "progress_rate")
