"""DNS rebinding and cross-site requests: a wrong Host or Origin is refused before anything else,
on HTTP and on the WebSocket handshake; the bind address is checked at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from harness import auth_headers
from pydantic import ValidationError
from starlette.testclient import WebSocketDenialResponse

from gpudeck.core.config import Settings
from gpudeck.core.security import allowed_hosts, host_allowed, origin_allowed
from gpudeck.main import create_app


def ws_status(client: TestClient, url: str, **kwargs: Any) -> int:
    """101 when the handshake is accepted, else the HTTP status of the denial."""
    try:
        with client.websocket_connect(url, **kwargs):
            return 101
    except WebSocketDenialResponse as exc:
        return exc.status_code


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.nip.io", ""])
def test_wrong_host_is_refused_even_with_a_token(client: TestClient, host: str) -> None:
    for path in ("/api/health", "/api/gpus", "/"):
        response = client.get(path, headers={"Host": host})
        assert response.status_code == 403, (path, host)
        assert response.json()["detail"]["code"] == "host_not_allowed"
    assert ws_status(client, "/ws/telemetry", headers={"Host": host}) == 403


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://testserver.evil"])
def test_foreign_origin_is_refused(client: TestClient, origin: str) -> None:
    assert client.post("/api/jobs", json={}, headers={"Origin": origin}).status_code == 403
    assert client.get("/api/gpus", headers={"Origin": origin}).status_code == 403
    assert ws_status(client, "/ws/telemetry", headers={"Origin": origin}) == 403


def test_same_origin_and_configured_origins_pass(
    settings: Settings, session_factory: object, admin_token: str
) -> None:
    settings = settings.model_copy(update={"allowed_origins": "https://deck.example.org"})
    with TestClient(create_app(settings), headers=auth_headers(admin_token)) as client:
        assert client.get("/api/gpus", headers={"Origin": "http://testserver"}).status_code == 200
        ok = client.get("/api/gpus", headers={"Origin": "https://deck.example.org"})
        assert ok.status_code == 200
        assert ws_status(client, "/ws/telemetry", headers={"Origin": "http://testserver"}) == 101


def test_host_rules() -> None:
    hosts = allowed_hosts("127.0.0.1", ["gpu-box.lan:8000"])
    assert host_allowed("localhost:5173", hosts)
    assert host_allowed("[::1]:8000", hosts)
    assert host_allowed("gpu-box.lan:8000", hosts)
    assert not host_allowed("gpu-box.lan:9000", hosts)
    assert not host_allowed("gpu-box.lan", hosts)
    assert not host_allowed("127.0.0.1:80:80", hosts)
    assert not host_allowed("localhost.evil.example", hosts)
    assert not host_allowed("localhost:²", hosts)
    assert not host_allowed("localhost:" + "9" * 5000, hosts)
    assert "0.0.0.0" not in allowed_hosts("0.0.0.0", [])
    assert origin_allowed("http://localhost:5173", "localhost:5173", frozenset())
    assert not origin_allowed("http://localhost:5173", "localhost:8000", frozenset())


def test_public_bind_without_auth_refuses_to_start(settings: Settings) -> None:
    with pytest.raises(ValidationError, match="GPUDECK_AUTH=off"):
        Settings(host="0.0.0.0", auth="off")
    Settings(host="0.0.0.0", auth="on")
    Settings(host="127.0.0.1", auth="off")
    with pytest.raises(RuntimeError, match="authentication off"):
        create_app(settings.model_copy(update={"host": "192.168.1.5", "auth": "off"}))


def test_auth_off_on_loopback_acts_as_local_admin(
    settings: Settings, session_factory: object
) -> None:
    with TestClient(create_app(settings.model_copy(update={"auth": "off"}))) as anonymous:
        assert anonymous.get("/api/auth/me").json()["name"] == "local"
        assert anonymous.get("/api/gpus", headers={"Host": "evil.example"}).status_code == 403


def test_dashboard_files_are_public(
    settings: Settings, session_factory: object, tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text("<html>sign in</html>")
    (dist / "assets" / "app.js").write_text("console.log(1)")
    (tmp_path / "secret.txt").write_text("secret")
    with TestClient(create_app(settings.model_copy(update={"dashboard_dir": dist}))) as anonymous:
        assert anonymous.get("/").text == "<html>sign in</html>"
        assert anonymous.get("/jobs/12").text == "<html>sign in</html>"  # client-side route
        assert anonymous.get("/assets/app.js").text == "console.log(1)"
        assert "secret" not in anonymous.get("/../secret.txt").text
        assert "secret" not in anonymous.get("/%2e%2e/secret.txt").text
        assert anonymous.get("/api/jobs").status_code == 401
