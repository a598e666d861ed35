"""The WebSocket handshake on a real server: refused before accept without a valid token or from
a foreign origin; a browser's two ways of sending the token are accepted."""

from __future__ import annotations

import asyncio

import pytest
from harness import create_token, live_server
from sqlalchemy.orm import Session, sessionmaker
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from gpudeck.core.config import Settings


async def status_of(url: str, **kwargs: object) -> int:
    try:
        async with connect(url, open_timeout=10, **kwargs) as ws:  # type: ignore[arg-type]
            await asyncio.wait_for(ws.recv(), timeout=10)
            return 101
    except InvalidStatus as exc:
        return exc.response.status_code


@pytest.mark.timeout(120)
def test_handshake(settings: Settings, session_factory: sessionmaker[Session]) -> None:
    token = create_token(session_factory, "user", "alice")
    with live_server(settings) as url:
        ws = url.replace("http", "ws", 1) + "/ws/telemetry"

        async def run() -> None:
            assert await status_of(ws) == 401
            assert await status_of(ws + "?token=gpd_wrong") == 401
            assert await status_of(ws, subprotocols=["gpudeck", "bearer.gpd_wrong"]) == 401
            good = {"Authorization": f"Bearer {token}"}
            assert await status_of(ws, additional_headers=good) == 101
            assert await status_of(ws + f"?token={token}&history_s=5") == 101
            assert await status_of(ws, subprotocols=["gpudeck", f"bearer.{token}"]) == 101
            evil = {**good, "Origin": "http://evil.example"}
            assert await status_of(ws, additional_headers=evil) == 403

        asyncio.run(run())
