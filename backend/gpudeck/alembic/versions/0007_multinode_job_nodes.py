"""job_nodes: each node's part of a multi-node job (claim, lease, rendezvous, end);
node_tokens: the tokens an admin issues for nodes to join; nodes.address: where peers reach a node

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 22:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "job_nodes",
        sa.Column(
            "job_id", sa.BigInteger(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("node", sa.String(128), nullable=False),
        sa.Column("node_rank", sa.Integer(), nullable=False),
        sa.Column("rank_offset", sa.Integer(), nullable=False),
        sa.Column("local_world_size", sa.Integer(), nullable=False),
        sa.Column("address", sa.String(255)),
        sa.Column("port", sa.Integer()),
        sa.Column("claimed_at", sa.DateTime(timezone=True)),
        sa.Column(
            "heartbeat_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("outcome", sa.String(16)),
        sa.PrimaryKeyConstraint("job_id", "node", name="pk_job_nodes"),
    )
    op.create_table(
        "node_tokens",
        sa.Column("node", sa.String(128), primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
    )
    op.add_column("nodes", sa.Column("address", sa.String(255)))


def downgrade() -> None:
    op.drop_column("nodes", "address")
    op.drop_table("node_tokens")
    op.drop_table("job_nodes")
