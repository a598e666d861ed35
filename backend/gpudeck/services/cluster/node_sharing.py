"""An admin's sharing policy for a node (docs/sharing.md): whether jobs that ask to share a
device by memory may share this node's devices (off by default), and whether jobs of different
users may share one device (off: the same user's jobs only). Takes a Session, never commits."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from gpudeck.models import Node
from gpudeck.services.errors import NotFound


@dataclass(frozen=True)
class NodeSharing:
    node: str
    share_memory: bool
    share_across_users: bool

    def words(self) -> str:
        if not self.share_memory:
            return f"node {self.node}: sharing off (jobs hold whole devices)"
        who = "any users' jobs" if self.share_across_users else "one user's jobs only"
        return f"node {self.node}: sharing on, {who} per device"


def set_sharing(
    session: Session, node: str, *, allow: bool | None = None, across_users: bool | None = None
) -> NodeSharing:
    """Change what is given (None: keep it) and return the node's policy. Jobs already placed
    keep their devices; the next placements follow the new policy."""
    row = session.get(Node, node, with_for_update=True)
    if row is None:
        raise NotFound(message=f"no node {node!r} (it registers when its sampler starts)",
                       field="node", code="node_not_found")  # fmt: skip
    if allow is not None:
        row.share_memory = allow
    if across_users is not None:
        row.share_across_users = across_users
    session.flush()
    return NodeSharing(row.name, row.share_memory, row.share_across_users)
