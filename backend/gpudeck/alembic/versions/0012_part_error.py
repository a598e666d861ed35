"""What a node's part of a job across nodes reported when it ended failed, kept while the job
waits for its real cause (a part whose ranks only lost a peer is not the cause)

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 02:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("job_nodes", sa.Column("error", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("job_nodes", "error")
