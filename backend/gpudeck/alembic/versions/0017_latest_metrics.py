"""latest_metrics: each job's newest value of every metric it reported, kept as its metric
rows are recorded (a sweep reads its members' figures from it); filled from the rows already
recorded

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 13:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Newest by arrival (id), as the recording merges them: a preempted job run again from its
# checkpoint writes steps it had already written, and its new figures are the newest.
FILL = """
UPDATE jobs SET latest_metrics = newest.metrics
FROM (
    SELECT job_id, jsonb_object_agg(key, value) AS metrics
    FROM (
        SELECT DISTINCT ON (m.job_id, kv.key) m.job_id, kv.key, kv.value
        FROM job_metrics m CROSS JOIN LATERAL jsonb_each(m.metrics) AS kv
        ORDER BY m.job_id, kv.key, m.id DESC
    ) AS each_newest
    GROUP BY job_id
) AS newest
WHERE jobs.id = newest.job_id
"""


def upgrade() -> None:
    op.add_column(
        "jobs",
        sa.Column(
            "latest_metrics",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default="{}",
            nullable=False,
        ),
    )
    op.execute(FILL)


def downgrade() -> None:
    op.drop_column("jobs", "latest_metrics")
