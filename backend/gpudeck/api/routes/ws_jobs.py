"""`WS /ws/jobs/{id}`: a snapshot (job + recent metrics) on connect, then the job's events as
they happen: status, progress, metrics, log lines, checkpoints, errors. Closes after the job
reaches a terminal state.

Each connection reads the job's Redis stream (XREAD, one blocking read at a time) into a bounded
queue; a client too slow to keep up loses the oldest frames, never makes the server buffer
without bound (it is told how many it lost).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Annotated, Any, cast

import redis.asyncio as aioredis
from fastapi import APIRouter, Path, WebSocket, WebSocketDisconnect
from redis.exceptions import RedisError
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.api.auth import current_principal
from gpudeck.api.errors import status_for
from gpudeck.core.redis import API_TIMEOUT_S, async_client
from gpudeck.core.tasks import cancel_and_wait
from gpudeck.engine.events import decode
from gpudeck.models import JobStatus
from gpudeck.schemas.jobs import JobPublic
from gpudeck.services.errors import DomainError, Forbidden
from gpudeck.services.jobs import events as job_events
from gpudeck.services.jobs import state as job_state
from gpudeck.services.jobs.events import StreamReply
from gpudeck.services.jobs.lookup import get_job

router = APIRouter(tags=["job runs"])
QUEUE_FRAMES = 1000
SNAPSHOT_METRICS = 1000
BLOCK_MS = 1000
RETRY_S = 1.0
TERMINAL = {s.value for s in job_state.TERMINAL}


def _snapshot(
    factory: sessionmaker[Session], job_id: int, user: Any
) -> tuple[dict[str, Any], bool]:
    with factory() as session:
        job = get_job(session, job_id)
        if not user.may_manage(job.owner):
            raise Forbidden(f"job {job_id} belongs to {job.owner}", field="job_id")
        rows = job_events.list_metrics(session, job_id, after_step=None, limit=100_000)
        frame = {
            "type": "snapshot",
            "job": JobPublic.model_validate(job).model_dump(mode="json"),
            "metrics": [{"step": r.step, "metrics": r.metrics} for r in rows[-SNAPSHOT_METRICS:]],
        }
        return frame, JobStatus(job.status) in job_state.TERMINAL


def _status(kind: str, message: str | None) -> dict[str, Any]:
    return {"type": kind, "rank": 0, "ts": time.time(), "data": {"message": message}}


class _Feed:
    """The job's stream into a bounded queue; the oldest frames go when the client lags."""

    def __init__(self, client: aioredis.Redis, job_id: int, start_id: str) -> None:
        self.client = client
        self.stream = job_events.job_stream(job_id)
        self.last_id = start_id
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(QUEUE_FRAMES)
        self.dropped = 0

    async def run(self) -> None:
        """Follows the stream; while Redis cannot be read, says so once and retries, then
        resumes where it stopped (the stream keeps what was written meanwhile)."""
        unavailable = False
        while True:
            try:
                reply = cast(
                    StreamReply,
                    await self.client.xread({self.stream: self.last_id}, block=BLOCK_MS, count=500),
                )
            except (RedisError, OSError):
                if not unavailable:
                    unavailable = True
                    self._put(_status("unavailable", "job feed unavailable: redis unavailable"))
                await asyncio.sleep(RETRY_S)
                continue
            if unavailable:
                unavailable = False
                self._put(_status("available", None))
            for _, entries in reply or []:
                for entry_id, fields in entries:
                    self.last_id = entry_id
                    self._put(decode(fields).frame())

    def _put(self, frame: dict[str, Any]) -> None:
        if self.queue.full():
            self.queue.get_nowait()
            self.dropped += 1
        self.queue.put_nowait(frame)


async def _start_id(client: aioredis.Redis, job_id: int) -> str:
    """The stream's newest id now: events after it are new to a client that read the DB."""
    newest = await client.xrevrange(job_events.job_stream(job_id), count=1)
    return str(newest[0][0]) if newest else "0-0"


@router.websocket("/ws/jobs/{job_id}")
async def job_feed(websocket: WebSocket, job_id: Annotated[int, Path(ge=1, le=2**63 - 1)]) -> None:
    user = current_principal(websocket)
    factory = websocket.app.state.sessionmaker
    client = async_client(
        str(websocket.app.state.settings.redis_url),
        timeout_s=API_TIMEOUT_S,
        block_s=BLOCK_MS / 1000,
    )
    try:
        start = await _start_id(client, job_id)
        try:
            snapshot, finished = await asyncio.to_thread(_snapshot, factory, job_id, user)
        except DomainError as exc:
            # WebSocket close codes 4000-4999 are the application's: 4000 + the HTTP status.
            await websocket.close(code=4000 + status_for(exc), reason=exc.message)
            return
        await websocket.accept()
        await websocket.send_json(snapshot)
        if not finished:
            await _relay(websocket, _Feed(client, job_id, start))
        await websocket.close()
    except (WebSocketDisconnect, RuntimeError, OSError):
        pass  # the client went away
    finally:
        await client.aclose()


async def _relay(websocket: WebSocket, feed: _Feed) -> None:
    reader = asyncio.create_task(feed.run())
    closed = asyncio.create_task(_wait_closed(websocket))
    try:
        while not closed.done():
            getter = asyncio.create_task(feed.queue.get())
            await asyncio.wait({getter, closed}, return_when=asyncio.FIRST_COMPLETED)
            if not getter.done():
                getter.cancel()
                return
            frame = getter.result()
            if feed.dropped:
                await websocket.send_json({"type": "dropped", "count": feed.dropped})
                feed.dropped = 0
            await websocket.send_json(frame)
            if frame["type"] == "status" and frame["data"].get("status") in TERMINAL:
                return
    finally:
        for task in (reader, closed):
            await cancel_and_wait(task)


async def _wait_closed(websocket: WebSocket) -> None:
    """Reads (and ignores) what the client sends, to notice a close at once."""
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
        while (await websocket.receive())["type"] != "websocket.disconnect":
            pass
