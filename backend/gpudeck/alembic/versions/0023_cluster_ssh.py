"""clusters reached over SSH: the login node's port, the key GPUDeck signs in with and the
known_hosts file its host key is checked against (paths on the API's host); access 'ssh' needs
all of them with ssh_host

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-28 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("clusters", sa.Column("ssh_port", sa.Integer(), nullable=True))
    op.add_column("clusters", sa.Column("ssh_key_path", sa.Text(), nullable=True))
    op.add_column("clusters", sa.Column("known_hosts_path", sa.Text(), nullable=True))
    op.create_check_constraint(
        "ck_clusters_ssh",
        "clusters",
        "access = 'local' OR (ssh_host IS NOT NULL AND ssh_port IS NOT NULL "
        "AND ssh_key_path IS NOT NULL AND known_hosts_path IS NOT NULL)",
    )


def downgrade() -> None:
    op.drop_constraint("ck_clusters_ssh", "clusters", type_="check")
    op.drop_column("clusters", "known_hosts_path")
    op.drop_column("clusters", "ssh_key_path")
    op.drop_column("clusters", "ssh_port")
