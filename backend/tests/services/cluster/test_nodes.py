"""Nodes joining and leaving: a node joins only with the token issued for it (a new one
replaces the old, and only its hash is stored), and what a submit reads of the nodes it names,
their source and whether their sampler has gone silent, refuses the silent ones by name."""

from __future__ import annotations

import pytest
from harness import register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.core.security import hash_token
from gpudeck.models import NodeToken
from gpudeck.services.cluster.inventory import OFFLINE_AFTER_S
from gpudeck.services.cluster.nodes import (
    NodeFacts,
    NodeOffline,
    issue_token,
    node_facts,
    refuse_offline,
    token_admits,
)


def test_a_node_joins_only_with_the_token_issued_for_it(db: Session) -> None:
    secret = issue_token(db, "gamma")
    assert token_admits(db, "gamma", secret)
    assert not token_admits(db, "delta", secret)
    assert not token_admits(db, "gamma", issue_token(db, "delta"))
    renewed = issue_token(db, "gamma")  # a new token replaces the old one
    assert token_admits(db, "gamma", renewed) and not token_admits(db, "gamma", secret)


def test_only_the_token_s_hash_is_stored_one_row_a_node(db: Session) -> None:
    issue_token(db, "gamma")
    secret = issue_token(db, "gamma")
    db.commit()
    stored = db.get(NodeToken, "gamma")
    assert stored is not None and stored.token_hash == hash_token(secret)
    rows = db.execute(text("SELECT * FROM node_tokens")).all()
    assert len(rows) == 1 and all(secret not in str(value) for value in rows[0])


def silence(db: Session, node: str, seconds: float) -> None:
    db.execute(
        text("UPDATE nodes SET last_seen_at = now() - make_interval(secs => :s) WHERE name = :n"),
        {"s": seconds, "n": node},
    )
    db.commit()


def test_node_facts_say_the_source_and_whether_the_sampler_went_silent(db: Session) -> None:
    register_devices(db, "1x80GiB", node="alpha")
    register_devices(db, "1x80GiB", node="beta")
    silence(db, "alpha", OFFLINE_AFTER_S - 30)  # late, but within the limit
    silence(db, "beta", OFFLINE_AFTER_S + 30)
    facts = node_facts(db, ["beta", "alpha", "beta", "nowhere"])
    assert facts == {
        "alpha": NodeFacts("simulated", silent=False),
        "beta": NodeFacts("simulated", silent=True),
    }  # a name of no node is absent: the submit's own check names it unknown


def test_refuse_offline_names_every_silent_node_it_is_asked_about() -> None:
    facts = {
        "alpha": NodeFacts("nvml", silent=False),
        "beta": NodeFacts("nvml", silent=True),
        "delta": NodeFacts("nvml", silent=True),
    }
    refuse_offline(facts, ["alpha", "nowhere"], "devices")  # none silent: nothing raised
    with pytest.raises(NodeOffline) as info:
        refuse_offline(facts, ["delta", "alpha", "beta", "delta"], "node")
    assert (info.value.field, info.value.code) == ("node", "node_offline")
    assert info.value.extra == {"nodes": ["beta", "delta"]}
    assert str(info.value).startswith("node beta, delta is offline")
