"""A job across nodes waits in the queue: the nodes of its named devices, and a count spread
over nodes (`nodes`: at most this many; `devices_per_node`: exactly this many on each)

Revision ID: 0010
Revises: 0009 (0009_node_logs, merged from logs17 first)
Create Date: 2026-11-25 14:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("requested_nodes", JSONB(), nullable=True))
    op.add_column("jobs", sa.Column("spread_nodes", sa.Integer(), nullable=True))
    op.add_column("jobs", sa.Column("devices_per_node", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("jobs", "devices_per_node")
    op.drop_column("jobs", "spread_nodes")
    op.drop_column("jobs", "requested_nodes")
