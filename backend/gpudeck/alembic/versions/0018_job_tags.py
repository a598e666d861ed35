"""tags and notes: free text a job's owner writes on it (a baseline, why it was run), listed
and searched with the jobs; a GIN index answers "every job tagged baseline" from the index

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 17:05:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "jobs",
        sa.Column(
            "tags",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default="[]",
            nullable=False,
        ),
    )
    op.add_column("jobs", sa.Column("notes", sa.Text(), server_default="", nullable=False))
    op.create_index("ix_jobs_tags", "jobs", ["tags"], postgresql_using="gin")


def downgrade() -> None:
    op.drop_index("ix_jobs_tags", table_name="jobs")
    op.drop_column("jobs", "notes")
    op.drop_column("jobs", "tags")
