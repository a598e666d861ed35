from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, DateTime, Integer, String, Text, func
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import Mapped, mapped_column

from gpudeck.core.db import Base


class Cluster(Base):
    """A place to run jobs other than GPUDeck's own nodes: a Slurm cluster an admin connected
    (docs/slurm.md). Jobs reach it through the adapter (gpudeck.slurm); this row says which
    partitions, account and QOS to submit with, where the logs and checkpoints go (a directory
    the compute nodes share), and how to reach its commands."""

    __tablename__ = "clusters"
    __table_args__ = (
        CheckConstraint("kind = 'slurm'", name="ck_clusters_kind"),
        CheckConstraint("access IN ('local', 'ssh')", name="ck_clusters_access"),
        CheckConstraint("cardinality(partitions) >= 1", name="ck_clusters_partitions"),
        CheckConstraint(
            "access = 'local' OR (ssh_host IS NOT NULL AND ssh_port IS NOT NULL "
            "AND ssh_key_path IS NOT NULL AND known_hosts_path IS NOT NULL)",
            name="ck_clusters_ssh",
        ),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    partitions: Mapped[list[str]] = mapped_column(ARRAY(String(64)))
    account: Mapped[str | None] = mapped_column(String(64))
    qos: Mapped[str | None] = mapped_column(String(64))
    shared_dir: Mapped[str] = mapped_column(Text)
    # How GPUDeck runs the cluster's commands: 'local' (this host is a submit host) or 'ssh'
    # to a login node: `ssh_host` (user@host) on `ssh_port`, signing in with the key at
    # `ssh_key_path` and checking the host key against `known_hosts_path` (paths on the API's
    # host; the key itself is never read by GPUDeck, only handed to ssh).
    access: Mapped[str] = mapped_column(String(16), server_default="local")
    ssh_host: Mapped[str | None] = mapped_column(String(255))
    ssh_port: Mapped[int | None] = mapped_column(Integer)
    ssh_key_path: Mapped[str | None] = mapped_column(Text)
    known_hosts_path: Mapped[str | None] = mapped_column(Text)
    # The slurm.conf the commands read (SLURM_CONF); None: the host's default.
    slurm_conf: Mapped[str | None] = mapped_column(Text)
    # The Python the compute nodes start ranks with (GPUDeck installed in it, on the shared
    # filesystem); None: the interpreter GPUDeck itself runs in, at the same path.
    python: Mapped[str | None] = mapped_column(Text)
    # Each GRES type's memory in bytes ({"h100": 85899345920}): Slurm does not know it, and
    # the submit needs it to choose a type the job's estimate fits.
    gpu_memory: Mapped[dict[str, int]] = mapped_column(JSONB, server_default="{}")
    # The last read of its nodes Slurm answered, and the first one it did not answer since
    # (None while it answers): what the board says of a cluster, whichever process read it.
    answered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    unreachable_since: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
