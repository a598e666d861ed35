"""A job's unnamed devices and nodes are SQL NULL, not the JSON value null: the columns now
store None as NULL (JSONB none_as_null), and rows written before are mended

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 20:10:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ("requested_devices", "requested_nodes")


def upgrade() -> None:
    for column in COLUMNS:
        op.execute(f"UPDATE jobs SET {column} = NULL WHERE {column} = 'null'::jsonb")


def downgrade() -> None:
    pass  # SQL NULL reads as None through either mapping: nothing to undo
