"""Where a checkpoint is: the node that wrote it, its directory there and each file's size,
so an API on another machine lists it truly and says where the bytes are

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26 04:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("checkpoints", sa.Column("node", sa.String(255), nullable=True))
    op.add_column("checkpoints", sa.Column("node_path", sa.String(4096), nullable=True))
    op.add_column("checkpoints", sa.Column("file_sizes", postgresql.JSONB(), nullable=True))


def downgrade() -> None:
    op.drop_column("checkpoints", "file_sizes")
    op.drop_column("checkpoints", "node_path")
    op.drop_column("checkpoints", "node")
