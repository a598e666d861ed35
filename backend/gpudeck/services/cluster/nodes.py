"""Nodes joining and leaving: the token an admin issues for a node, and which nodes are online.

The token admits a node by name (`gpudeck node` refuses to start without the one issued for
it): an admin decides which machines join the pool. It is not a wall between nodes: a node
holds the shared database and Redis URLs, which already grant what a node needs.
Takes a Session, never commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import String, any_, bindparam, func, select
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.orm import Session

from gpudeck.core.security import hash_token, new_token, token_matches
from gpudeck.models import Node, NodeToken
from gpudeck.services.cluster.inventory import OFFLINE_AFTER_S
from gpudeck.services.errors import Conflict


def issue_token(session: Session, node: str) -> str:
    """A new token for `node` (replacing any earlier one); only its hash is stored."""
    secret = new_token()
    stmt = insert(NodeToken).values(node=node, token_hash=hash_token(secret))
    session.execute(
        stmt.on_conflict_do_update(
            index_elements=[NodeToken.node],
            set_={"token_hash": stmt.excluded.token_hash, "created_at": func.now()},
        )
    )
    session.flush()
    return secret


def token_admits(session: Session, node: str, secret: str) -> bool:
    stored = session.get(NodeToken, node)
    return stored is not None and token_matches(secret, stored.token_hash)


class NodeOffline(Conflict):
    def __init__(self, field: str, nodes: list[str]) -> None:
        names = ", ".join(nodes)
        super().__init__(
            message=(
                f"node {names} is offline (its sampler has not reported for over "
                f"{OFFLINE_AFTER_S:g} s); its devices cannot be chosen"
            ),
            field=field,
            code="node_offline",
            extra={"nodes": nodes},
        )


@dataclass(frozen=True)
class NodeFacts:
    """What a submit checks of a node: where its devices come from, and whether its sampler
    has gone silent (by the database's clock, as the scheduler judges it)."""

    source: str
    silent: bool


# Built once: a submit runs it, and building the statement costs more CPU than running it.
_FACTS = select(
    Node.name,
    Node.source,
    Node.last_seen_at < func.now() - timedelta(seconds=OFFLINE_AFTER_S),
).where(Node.name == any_(bindparam("names", type_=ARRAY(String))))


def node_facts(session: Session, names: Sequence[str]) -> dict[str, NodeFacts]:
    """The facts of each of `names` that exists, in one read."""
    rows = session.execute(_FACTS, {"names": list(dict.fromkeys(names))})
    return {name: NodeFacts(source, bool(silent)) for name, source, silent in rows}


def refuse_offline(facts: Mapping[str, NodeFacts], nodes: Iterable[str], field: str) -> None:
    """NodeOffline naming each of `nodes` whose sampler has gone silent."""
    silent = [n for n in dict.fromkeys(nodes) if n in facts and facts[n].silent]
    if silent:
        raise NodeOffline(field, sorted(silent))
