"""Every route in the OpenAPI schema, with every method it declares, and every WebSocket:
refused without a token, with a malformed one, and with a revoked one."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from harness import auth_headers
from starlette.routing import WebSocketRoute
from starlette.testclient import WebSocketDenialResponse

from gpudeck.main import create_app

PUBLIC = {("GET", "/api/health")}
METHODS = ("get", "put", "post", "delete", "patch", "options", "head", "trace")


def ws_status(client: TestClient, url: str, **kwargs: Any) -> int:
    """101 when the handshake is accepted, else the HTTP status of the denial."""
    try:
        with client.websocket_connect(url, **kwargs):
            return 101
    except WebSocketDenialResponse as exc:
        return exc.status_code


def concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "1", path)


def http_operations(client: TestClient) -> list[tuple[str, str]]:
    schema: dict[str, Any] = client.app.openapi()  # type: ignore[attr-defined]
    return [
        (method.upper(), path)
        for path, item in schema["paths"].items()
        for method in item
        if method in METHODS
    ]


def ws_paths(client: TestClient) -> list[str]:
    """WebSocket routes are not in the OpenAPI schema; find them in the router (FastAPI may keep
    included routers nested, so walk them)."""
    found: list[str] = []

    def walk(routes: Any, prefix: str = "") -> None:
        for route in routes:
            if isinstance(route, WebSocketRoute):
                found.append(prefix + route.path)
            inner = getattr(route, "original_router", None)
            if inner is not None:
                walk(inner.routes, prefix + getattr(inner, "prefix", ""))

    walk(client.app.routes)  # type: ignore[attr-defined]
    return found


def revoked_token(client: TestClient, token: str) -> str:
    me = client.get("/api/auth/tokens", headers=auth_headers(token)).json()
    assert (
        client.delete(f"/api/auth/tokens/{me[0]['id']}", headers=auth_headers(token)).status_code
        == 200
    )
    return token


def assert_refused(client: TestClient, headers: dict[str, str]) -> None:
    operations = http_operations(client)
    assert len(operations) >= 10, "the schema lost its routes: this test would prove nothing"
    for method, path in operations:
        if (method, path) in PUBLIC:
            continue
        response = client.request(method, concrete(path), headers=headers)
        assert response.status_code == 401, (method, path, response.status_code, response.text)
    paths = ws_paths(client)
    assert paths, "no WebSocket routes found"
    for path in paths:
        assert ws_status(client, concrete(path), headers=headers) == 401, path


def test_no_token(anonymous: TestClient) -> None:
    assert_refused(anonymous, {})


@pytest.mark.parametrize(
    "value", ["Bearer", "Bearer gpd_nope", "Bearer " + "gpd_" + "A" * 43, "Basic YWRtaW46YWRtaW4="]
)
def test_bad_tokens(anonymous: TestClient, value: str) -> None:
    assert_refused(anonymous, {"Authorization": value})


def test_revoked_token(anonymous: TestClient, alice: str) -> None:
    assert anonymous.get("/api/auth/me", headers=auth_headers(alice)).status_code == 200
    assert_refused(anonymous, auth_headers(revoked_token(anonymous, alice)))


def test_revoked_token_in_websocket_forms(anonymous: TestClient, alice: str) -> None:
    token = revoked_token(anonymous, alice)
    for path in ws_paths(anonymous):
        for kwargs in (
            {"subprotocols": ["gpudeck", f"bearer.{token}"]},
            {"url": f"{concrete(path)}?token={token}"},
        ):
            url = kwargs.pop("url", concrete(path))
            assert ws_status(anonymous, url, **kwargs) == 401


def test_only_health_and_the_data_free_docs_page_are_public(anonymous: TestClient) -> None:
    assert anonymous.get("/api/health").status_code == 200
    for path in ("/openapi.json", "/redoc", "/metrics", "/api/nope", "/ws/nope", "/docs/x"):
        assert anonymous.get(path).status_code == 401, path
    # The page and its scripts (GPUDeck's own copy of Swagger UI) hold no data.
    page = anonymous.get("/docs")
    assert page.status_code == 200 and "/docs/assets/swagger-ui-bundle.js" in page.text
    bundle = anonymous.get("/docs/assets/swagger-ui-bundle.js")
    assert bundle.status_code == 200 and "SwaggerUIBundle" in bundle.text
    for name in ("index.html", "swagger-editor.js", "..%2F..%2Fcore.py"):
        assert anonymous.get(f"/docs/assets/{name}").status_code in (401, 404), name


def test_the_schema_declares_the_bearer_token(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["bearer"] == {
        "type": "http", "scheme": "bearer", "description": "a GPUDeck API token"
    }  # fmt: skip
    assert schema["security"] == [{"bearer": []}]
    assert schema["paths"]["/api/health"]["get"]["security"] == []


def test_unknown_methods_and_paths_are_refused(anonymous: TestClient) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert anonymous.request(method, "/").status_code == 401
        assert anonymous.request(method, "/api/health").status_code == 401


def test_valid_token_passes(client: TestClient) -> None:
    assert client.get("/api/gpus").status_code == 200
    assert client.get("/openapi.json").status_code == 200
    assert client.get("/api/auth/me").json()["role"] == "admin"


def test_configured_public_metrics_and_docs(settings: Any, session_factory: Any) -> None:
    open_settings = settings.model_copy(update={"metrics_public": True, "public_docs": True})
    with TestClient(create_app(open_settings)) as anonymous:
        assert anonymous.get("/openapi.json").status_code == 200
        assert anonymous.get("/metrics").status_code != 401
        assert anonymous.get("/api/gpus").status_code == 401
