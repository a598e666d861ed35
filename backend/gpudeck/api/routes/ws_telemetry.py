"""`WS /ws/telemetry`: a snapshot with recent history on connect, then one message per sample.
Every message is a `TelemetryMessage` (see telemetry/schema.py)."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query, WebSocket, WebSocketDisconnect

from gpudeck.api.telemetry_hub import Subscription, TelemetryHub

router = APIRouter(tags=["telemetry"])


@router.websocket("/ws/telemetry")
async def telemetry_feed(
    websocket: WebSocket,
    history_s: Annotated[int, Query(ge=0, le=86400, description="seconds of history")] = 120,
) -> None:
    hub: TelemetryHub = websocket.app.state.telemetry_hub
    await websocket.accept()
    snapshot, sub = hub.subscribe(history_s)
    watcher = asyncio.create_task(_watch_close(websocket, sub))
    try:
        await websocket.send_text(snapshot)
        while (message := await sub.queue.get()) is not None:
            await websocket.send_text(message)
    except (WebSocketDisconnect, RuntimeError, OSError):
        pass  # the client went away mid-send
    finally:
        hub.unsubscribe(sub)
        watcher.cancel()


async def _watch_close(websocket: WebSocket, sub: Subscription) -> None:
    """Reads (and ignores) what the client sends, to notice a close at once."""
    try:
        while (await websocket.receive())["type"] != "websocket.disconnect":
            pass
    except (WebSocketDisconnect, RuntimeError, OSError):
        pass
    sub.close()
