"""`gpudeck user create`, `gpudeck token create/list/revoke`, straight against the database."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from harness import auth_headers
from typer.testing import CliRunner

from gpudeck.cli import app
from gpudeck.core.config import Settings


@pytest.fixture
def run_cli(settings: Settings, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GPUDECK_DATABASE_URL", str(settings.database_url))
    monkeypatch.setenv("GPUDECK_DATA_DIR", str(settings.data_dir))
    runner = CliRunner()

    def run(*args: str) -> str:
        result = runner.invoke(app, list(args))
        assert result.exit_code == 0, result.output
        return result.stdout

    return run


def test_user_and_token_commands(run_cli, anonymous: TestClient) -> None:  # type: ignore[no-untyped-def]
    first = run_cli("user", "create", "erin", "--role", "admin").strip().splitlines()[-1]
    me = anonymous.get("/api/auth/me", headers=auth_headers(first)).json()
    assert me["name"] == "erin" and me["role"] == "admin"

    second = run_cli("token", "create", "erin", "--name", "ci").strip().splitlines()[-1]
    assert anonymous.get("/api/auth/me", headers=auth_headers(second)).status_code == 200
    listing = run_cli("token", "list")
    assert "ci" in listing and second not in listing and first not in listing

    tokens = anonymous.get("/api/auth/tokens", headers=auth_headers(first)).json()
    ci = next(t for t in tokens if t["name"] == "ci")
    run_cli("token", "revoke", str(ci["id"]))
    assert anonymous.get("/api/auth/me", headers=auth_headers(second)).status_code == 401
    assert anonymous.get("/api/auth/me", headers=auth_headers(first)).status_code == 200
    assert "erin" in run_cli("user", "list")
