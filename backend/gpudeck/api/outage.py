"""A store that cannot be reached is a 503 naming it, with Retry-After, never a 500.

Outermost middleware: it also covers the security middleware, whose token lookup reads the
database. The bounds that make such an error come in seconds rather than a hang are set where
the clients are made (core/db.py, core/redis.py).
"""

from __future__ import annotations

import contextlib
import logging

import psycopg
from redis.exceptions import RedisError
from sqlalchemy import exc
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gpudeck.api.security import deny

log = logging.getLogger(__name__)
RETRY_AFTER_S = 2
WS_TRY_AGAIN_LATER = 1013  # RFC 6455: the server is overloaded or a dependency is down
_DB_ERRORS = (
    exc.OperationalError,
    exc.InterfaceError,
    exc.TimeoutError,  # no pooled connection came free in time
    psycopg.OperationalError,  # raised raw by the pool's checkout ping
    psycopg.InterfaceError,
)


def unavailable_store(error: BaseException) -> str | None:
    """'database' or 'redis' when `error` (or what caused it) says that store is unreachable."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, RedisError):
            return "redis"
        if isinstance(seen, _DB_ERRORS) or (
            isinstance(seen, exc.DBAPIError) and seen.connection_invalidated
        ):
            return "database"
        if isinstance(seen, BaseExceptionGroup):
            found = [s for s in map(unavailable_store, seen.exceptions) if s]
            return found[0] if found else None
        seen = seen.__cause__
    return None


class StoreOutageMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        started = connected = False

        async def tracking_receive() -> Message:
            nonlocal connected
            message = await receive()
            connected = connected or message["type"] == "websocket.connect"
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] in (
                "http.response.start",
                "websocket.accept",
                "websocket.close",
                "websocket.http.response.start",
            )
            await send(message)

        try:
            await self.app(scope, tracking_receive, tracking_send)
        except Exception as error:
            store = unavailable_store(error)
            if store is None:
                raise
            log.warning("%s %s: %s unavailable: %s", scope["type"], scope["path"], store, error)
            if not started:
                await refuse(scope, receive, send, store, connected=connected)
            elif scope["type"] == "websocket":
                await close_unavailable(send, store)
            else:
                raise


async def refuse(
    scope: Scope, receive: Receive, send: Send, store: str, *, connected: bool
) -> None:
    await deny(
        scope,
        receive,
        send,
        503,
        f"{store}_unavailable",
        f"{store} unavailable; retry in {RETRY_AFTER_S} s",
        headers=[(b"retry-after", str(RETRY_AFTER_S).encode())],
        connected=connected,
    )


async def close_unavailable(send: Send, store: str) -> None:
    with contextlib.suppress(RuntimeError, OSError):  # the client has gone already
        await send(
            {
                "type": "websocket.close",
                "code": WS_TRY_AGAIN_LATER,
                "reason": f"{store} unavailable",
            }
        )
