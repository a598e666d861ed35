"""Tokens: random, prefixed, stored only as SHA-256, revocable, expiring, last use recorded."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from fastapi.testclient import TestClient
from harness import auth_headers
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.core.security import looks_like_token, new_token
from gpudeck.services.accounts import users as user_service


def test_token_shape() -> None:
    tokens = {new_token() for _ in range(100)}
    assert len(tokens) == 100 and all(looks_like_token(t) for t in tokens)


def test_admin_creates_user_who_manages_own_tokens(client: TestClient, db: Session) -> None:
    created = client.post("/api/users", json={"name": "carol", "role": "user"})
    assert created.status_code == 201, created.text
    first = created.json()["token"]["token"]
    assert looks_like_token(first)
    assert client.post("/api/users", json={"name": "carol"}).status_code == 409

    stored = db.execute(text("SELECT token_hash, display_prefix FROM api_tokens")).all()
    assert (hashlib.sha256(first.encode()).hexdigest(), first[:10]) in [tuple(r) for r in stored]
    assert all(first not in str(tuple(r)) for r in db.execute(text("SELECT * FROM api_tokens")))

    headers = auth_headers(first)
    second = client.post("/api/auth/tokens", json={"name": "laptop"}, headers=headers).json()
    listed = client.get("/api/auth/tokens", headers=headers).json()
    assert [t["name"] for t in listed] == ["default", "laptop"]
    assert "token" not in listed[0] and listed[0]["last_used_at"] is not None

    revoked = client.delete(f"/api/auth/tokens/{second['id']}", headers=headers)
    assert revoked.status_code == 200 and revoked.json()["revoked_at"]
    assert client.get("/api/auth/me", headers=auth_headers(second["token"])).status_code == 401
    assert client.get("/api/auth/me", headers=headers).status_code == 200


def test_users_cannot_revoke_others_tokens(client: TestClient, alice: str, bob: str) -> None:
    bobs = client.get("/api/auth/tokens", headers=auth_headers(bob)).json()[0]
    assert (
        client.delete(f"/api/auth/tokens/{bobs['id']}", headers=auth_headers(alice)).status_code
        == 404
    )
    assert client.get("/api/auth/me", headers=auth_headers(bob)).status_code == 200
    assert client.delete(f"/api/auth/tokens/{bobs['id']}").status_code == 200  # an admin may
    assert client.get("/api/auth/me", headers=auth_headers(bob)).status_code == 401


def test_expired_and_disabled(client: TestClient, db: Session) -> None:
    user = user_service.create_user(db, "dave")
    expired = user_service.issue_token(db, user, expires_in=timedelta(seconds=-1)).secret
    live = user_service.issue_token(db, user).secret
    db.commit()
    assert client.get("/api/auth/me", headers=auth_headers(expired)).status_code == 401
    assert client.get("/api/auth/me", headers=auth_headers(live)).status_code == 200
    db.execute(text("UPDATE users SET disabled_at = now() WHERE name = 'dave'"))
    db.commit()
    assert client.get("/api/auth/me", headers=auth_headers(live)).status_code == 401
