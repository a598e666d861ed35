from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Integer,
    String,
    UniqueConstraint,
    func,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from gpudeck.core.db import Base


class Node(Base):
    """One machine with GPUs: it runs one worker and one sampler, registered by hostname."""

    __tablename__ = "nodes"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    source: Mapped[str] = mapped_column(String(16))  # "nvml" | "simulated"
    registered_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now()
    )
    last_seen_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now()
    )
    # Where the other nodes reach it (GPUDECK_NODE_ADDRESS), written by its sampler.
    address: Mapped[str | None] = mapped_column(String(255))
    # Sharing a device by memory (docs/sharing.md), set by an admin (`gpudeck nodes sharing`):
    # whether jobs asking to share may share this node's devices, and whether jobs of
    # different users may share one device (off: the same user's jobs only).
    share_memory: Mapped[bool] = mapped_column(Boolean, server_default="false")
    share_across_users: Mapped[bool] = mapped_column(Boolean, server_default="false")


class NodeToken(Base):
    """The token an admin issued for a node to join (`gpudeck nodes add`); only its hash."""

    __tablename__ = "node_tokens"

    node: Mapped[str] = mapped_column(String(128), primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class Device(Base):
    """The device inventory, upserted by the node's sampler. Identity is (node, uuid)."""

    __tablename__ = "devices"
    __table_args__ = (UniqueConstraint("node", "uuid", name="uq_devices_node_uuid"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    node: Mapped[str] = mapped_column(ForeignKey("nodes.name", ondelete="CASCADE"), index=True)
    uuid: Mapped[str] = mapped_column(String(96))
    index: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(128))
    source: Mapped[str] = mapped_column(String(16))
    memory_total_bytes: Mapped[int] = mapped_column(BigInteger)
    # Processes on the device that GPUDeck did not start: [{pid, used_memory_bytes}].
    external_processes: Mapped[list[dict[str, int]]] = mapped_column(JSONB, default=list)
    last_seen_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now()
    )
