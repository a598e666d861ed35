"""The one gate every HTTP request and WebSocket handshake passes (docs/security.md).

A pure ASGI middleware, outermost, so a route added tomorrow is protected without doing anything:
1. Host must be on the allowlist (this is what defeats DNS rebinding);
2. Origin, when sent, must be the same origin or an allowed one;
3. a valid token, unless the matched route is public (/api/health, the dashboard's files, and
   /metrics or the API docs when configured).
The principal is put in `scope["state"]["principal"]`; routes read it through `CurrentUser`.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode

import anyio.to_thread
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gpudeck.api.log_filters import websocket_refused
from gpudeck.api.routes.docs import DOCS_PATHS
from gpudeck.core.config import Settings
from gpudeck.core.security import (
    LOCAL_ADMIN,
    Principal,
    allowed_hosts,
    host_allowed,
    is_loopback,
    origin_allowed,
    parse_list,
)
from gpudeck.services.accounts.users import authenticate

log = logging.getLogger(__name__)
# Never dashboard files, whatever route matches them.
_API_PREFIXES = ("/api/", "/ws/", "/metrics", "/docs", "/redoc", "/openapi.json")
WS_SUBPROTOCOL = "gpudeck"
WS_TOKEN_PREFIX = "bearer."


class SecurityMiddleware:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.auth_on = settings.auth == "on"
        self.hosts = allowed_hosts(settings.host, parse_list(settings.allowed_hosts))
        self.origins = frozenset(
            o.rstrip("/").lower() for o in parse_list(settings.allowed_origins)
        )
        # The /docs page and its scripts hold no data; the schema they show needs a token.
        public = {"/api/health", *DOCS_PATHS}
        if settings.metrics_public:
            public.add("/metrics")
        if settings.public_docs:
            public.add("/openapi.json")
        self.public_paths = frozenset(public)
        self._operations: list[re.Pattern[str]] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not host_allowed(host, self.hosts):
            await deny(
                scope, receive, send, 403, "host_not_allowed", f"Host {host!r} is not allowed"
            )
            return
        origin = headers.get("origin")
        if origin is not None and not origin_allowed(origin, host, self.origins):
            await deny(
                scope, receive, send, 403, "origin_not_allowed", f"Origin {origin!r} is not allowed"
            )
            return
        if self._is_public(scope):
            await self.app(scope, receive, send)
            return
        principal = await self._principal(scope, headers)
        if principal is None:
            await deny(
                scope, receive, send, 401, "not_authenticated", "a valid API token is required"
            )
            return
        scope.setdefault("state", {})["principal"] = principal
        if scope["type"] == "websocket":
            send = _with_subprotocol(send, headers)
        await self.app(scope, receive, send)

    def _is_public(self, scope: Scope) -> bool:
        """The allowlist, plus the dashboard: a GET outside the API's prefixes that no API
        operation matches (so a route added anywhere is protected, whatever its path)."""
        path: str = scope["path"]
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            return False
        if path in self.public_paths:
            return True
        if path.startswith(_API_PREFIXES):
            return False
        return not any(p.fullmatch(path) for p in self._operation_paths(scope["app"]))

    def _operation_paths(self, app: Any) -> list[re.Pattern[str]]:
        if self._operations is None:
            self._operations = [_path_regex(p) for p in app.openapi().get("paths", {})]
        return self._operations

    async def _principal(self, scope: Scope, headers: Headers) -> Principal | None:
        if not self.auth_on:
            return LOCAL_ADMIN
        token = presented_token(scope, headers)
        if token is None:
            return None
        # Autocommit: a token lookup is one SELECT (and now and then an UPDATE of its
        # last use), which needs no transaction around it: two round trips fewer a request.
        factory = scope["app"].state.autocommit_sessionmaker

        def lookup() -> Principal | None:
            with factory() as session:
                return authenticate(session, token)

        return await anyio.to_thread.run_sync(lookup)


def _path_regex(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}]+\})", template)
    return re.compile(
        "".join(
            (".*" if p.endswith(":path}") else "[^/]+") if p.startswith("{") else re.escape(p)
            for p in parts
        )
    )


def presented_token(scope: Scope, headers: Headers) -> str | None:
    """`Authorization: Bearer` everywhere; for WebSockets also the `bearer.<token>` subprotocol
    or `?token=` (browsers cannot set headers on a WebSocket). The query form is removed from
    the scope, so it never reaches access logs or routes."""
    scheme, _, credentials = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and credentials.strip():
        return credentials.strip()
    if scope["type"] != "websocket":
        return None
    for protocol in _offered_subprotocols(headers):
        if protocol.startswith(WS_TOKEN_PREFIX):
            return protocol[len(WS_TOKEN_PREFIX) :]
    query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    tokens = [v for k, v in query if k == "token"]
    if tokens:
        rest = [(k, v) for k, v in query if k != "token"]
        scope["query_string"] = urlencode(rest).encode("latin-1")
        return tokens[0]
    return None


def _offered_subprotocols(headers: Headers) -> list[str]:
    offered = ",".join(headers.getlist("sec-websocket-protocol"))
    return [p.strip() for p in offered.split(",") if p.strip()]


def _with_subprotocol(send: Send, headers: Headers) -> Send:
    """A browser that offered subprotocols fails the handshake unless one is chosen; choose
    `gpudeck` when offered (never echo the token protocol back)."""
    if WS_SUBPROTOCOL not in _offered_subprotocols(headers):
        return send

    async def wrapped(message: Message) -> None:
        if message["type"] == "websocket.accept" and not message.get("subprotocol"):
            message = {**message, "subprotocol": WS_SUBPROTOCOL}
        await send(message)

    return wrapped


async def deny(
    scope: Scope,
    receive: Receive,
    send: Send,
    status: int,
    code: str,
    message: str,
    *,
    headers: list[tuple[bytes, bytes]] | None = None,
    connected: bool = False,
) -> None:
    """A JSON error like the API's own; for a WebSocket, an HTTP denial response before accept
    where the server supports it, else close code 4000 + status. `connected`: the handshake's
    websocket.connect message was already read."""
    body = json.dumps({"detail": {"code": code, "field": None, "message": message}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *(headers or []),
    ]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="gpudeck"'))
    log.info("refused %s %s: %s", scope["type"], scope["path"], code)
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    websocket_refused.set(True)  # uvicorn's "without completing handshake" is then INFO
    if not connected:
        await receive()  # websocket.connect
    if "websocket.http.response" in scope.get("extensions", {}):
        await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 4000 + status})


def check_bind(settings: Settings) -> None:
    """Settings refuse this combination when read; this catches copies made in code."""
    if settings.auth == "off" and not is_loopback(settings.host):
        raise RuntimeError(f"refusing to serve {settings.host} with authentication off")
