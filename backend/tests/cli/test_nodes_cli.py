"""`gpudeck nodes add` issues the token; `gpudeck node` refuses to join without that token."""

from __future__ import annotations

import re

import pytest
from sqlalchemy.orm import Session
from typer.testing import CliRunner

from gpudeck.cli import app
from gpudeck.core.config import Settings
from gpudeck.services.cluster.nodes import token_admits


@pytest.fixture
def server_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUDECK_DATABASE_URL", str(settings.database_url))
    monkeypatch.setenv("GPUDECK_REDIS_URL", str(settings.redis_url))
    monkeypatch.setenv("GPUDECK_NODE_NAME", "gpu-box-2")


def test_a_node_joins_with_the_token_an_admin_added_and_not_without(
    server_env: None, db: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    added = runner.invoke(app, ["nodes", "add", "gpu-box-2"])
    assert added.exit_code == 0, added.output
    secret = re.search(r"GPUDECK_NODE_TOKEN=(\S+)", added.output)
    assert secret is not None and token_admits(db, "gpu-box-2", secret.group(1))

    monkeypatch.setenv("GPUDECK_NODE_TOKEN", secret.group(1) + "x")
    refused = runner.invoke(app, ["node"])
    assert refused.exit_code == 2
    assert "no valid token for node gpu-box-2" in refused.output
    assert "gpudeck nodes add gpu-box-2" in refused.output
