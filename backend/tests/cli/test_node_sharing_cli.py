"""`gpudeck nodes sharing NAME`: an admin lets jobs share a node's devices by memory (off by
default), and chooses whether different users may share one device (default: the same user)."""

from __future__ import annotations

import pytest
from harness import TEST_NODE, register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session
from typer.testing import CliRunner

from gpudeck.cli import app
from gpudeck.core.config import Settings


@pytest.fixture
def server_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUDECK_DATABASE_URL", str(settings.database_url))
    monkeypatch.setenv("GPUDECK_REDIS_URL", str(settings.redis_url))


def policy(db: Session) -> tuple[bool, bool]:
    db.rollback()
    row = db.execute(
        text("SELECT share_memory, share_across_users FROM nodes WHERE name = :n"),
        {"n": TEST_NODE},
    ).one()
    return bool(row[0]), bool(row[1])


def test_an_admin_turns_sharing_on_and_across_users(server_env: None, db: Session) -> None:
    register_devices(db, "1x8GiB")
    runner = CliRunner()
    shown = runner.invoke(app, ["nodes", "sharing", TEST_NODE])
    assert shown.exit_code == 0 and "sharing off" in shown.output
    assert policy(db) == (False, False)
    on = runner.invoke(app, ["nodes", "sharing", TEST_NODE, "--on"])
    assert on.output.strip() == f"node {TEST_NODE}: sharing on, one user's jobs only per device"
    assert policy(db) == (True, False)
    across = runner.invoke(app, ["nodes", "sharing", TEST_NODE, "--across-users"])
    assert "any users' jobs per device" in across.output
    assert policy(db) == (True, True)
    assert runner.invoke(app, ["nodes", "sharing", TEST_NODE, "--off"]).exit_code == 0
    assert policy(db) == (False, True)
    unknown = runner.invoke(app, ["nodes", "sharing", "nowhere", "--on"])
    assert unknown.exit_code == 1 and "no node 'nowhere'" in unknown.output
