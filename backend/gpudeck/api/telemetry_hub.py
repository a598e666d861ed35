"""WebSocket fan-out: one Redis reader per API process, any number of clients.

The reader follows every node's telemetry stream (XREAD BLOCK) and keeps the recent history in
memory, as the raw JSON the sampler wrote. Each message is built once and handed to every
client's small queue; a client whose queue is full loses its oldest message, so a client that
stops reading costs at most `queue_size` messages (plus the transport's write buffer), never an
unbounded backlog.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from gpudeck.core.tasks import cancel_and_wait
from gpudeck.telemetry import stream

log = logging.getLogger(__name__)
QUEUE_SIZE = 8
_RETRY_S = 1.0


def _entry_ms(entry_id: str) -> int:
    return int(entry_id.partition("-")[0])


def _message(kind: str, samples: list[str]) -> str:
    return f'{{"type":"{kind}","samples":[{",".join(samples)}]}}'


def _status(kind: str, message: str | None) -> str:
    return json.dumps({"type": kind, "samples": [], "message": message})


class Subscription:
    """One client's queue: drop-oldest when full; `None` tells the sender to stop."""

    __slots__ = ("dropped", "queue")

    def __init__(self, maxsize: int) -> None:
        self.queue: asyncio.Queue[str | None] = asyncio.Queue(maxsize)
        self.dropped = 0

    def offer(self, message: str | None) -> None:
        if self.queue.full():
            self.queue.get_nowait()
            self.dropped += 1
        self.queue.put_nowait(message)

    def close(self) -> None:
        self.offer(None)


class TelemetryHub:
    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        history_s: float,
        queue_size: int = QUEUE_SIZE,
        block_ms: int = 1000,
        nodes_refresh_s: float = 5.0,
    ) -> None:
        self.redis = redis
        self.history_s = history_s
        self.queue_size = queue_size
        self.block_ms = block_ms
        self.nodes_refresh_s = nodes_refresh_s
        self.subscriptions: set[Subscription] = set()
        self.frames_total = 0
        self.dropped_closed = 0  # drops of clients that have gone
        self._ring: deque[tuple[int, str]] = deque()  # (stream time ms, NodeSample JSON)
        self._last_ids: dict[str, str] = {}
        self._snapshots: dict[int, str] = {}
        self._task: asyncio.Task[None] | None = None
        self.unavailable: str | None = None  # why telemetry cannot be read now, if it cannot

    @property
    def following(self) -> set[str]:
        """Stream keys this hub follows."""
        return set(self._last_ids)

    @property
    def dropped_total(self) -> int:
        return self.dropped_closed + sum(s.dropped for s in self.subscriptions)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="telemetry-hub")

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
        for sub in self.subscriptions:
            sub.close()

    def subscribe(self, history_s: int) -> tuple[str, Subscription]:
        """The snapshot message (history, oldest first) and a queue for every later sample.
        Synchronous: no sample can fall between the snapshot and the subscription."""
        sub = Subscription(self.queue_size)
        self.subscriptions.add(sub)
        if self.unavailable is not None:
            sub.offer(_status("unavailable", self.unavailable))
        return self.snapshot(history_s), sub

    def unsubscribe(self, sub: Subscription) -> None:
        if sub in self.subscriptions:
            self.subscriptions.discard(sub)
            self.dropped_closed += sub.dropped

    def snapshot(self, history_s: int) -> str:
        cached = self._snapshots.get(history_s)
        if cached is None:
            newest = self._ring[-1][0] if self._ring else 0
            since = newest - history_s * 1000
            cached = _message("snapshot", [raw for ms, raw in self._ring if ms > since])
            self._snapshots[history_s] = cached
        return cached

    def publish(self, entry_ms: int, raw: str) -> None:
        """Add one sample to the history and hand it to every client."""
        self._ring.append((entry_ms, raw))
        horizon = entry_ms - self.history_s * 1000
        while self._ring and self._ring[0][0] < horizon:
            self._ring.popleft()
        self._snapshots.clear()
        message = _message("sample", [raw])
        self.frames_total += 1
        for sub in self.subscriptions:
            sub.offer(message)

    async def _run(self) -> None:
        while True:
            try:
                await self._follow()
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as exc:
                if self.unavailable is None:
                    log.warning("telemetry reader: %s; retrying every %.0f s", exc, _RETRY_S)
                    self._set_available(False)
                await asyncio.sleep(_RETRY_S)

    def _set_available(self, available: bool) -> None:
        """Tell every client, once per change, so the dashboard can say why the charts stop."""
        self.unavailable = None if available else "telemetry unavailable: redis unavailable"
        message = _status("available" if available else "unavailable", self.unavailable)
        for sub in self.subscriptions:
            sub.offer(message)

    async def _follow(self) -> None:
        refreshed = float("-inf")
        while True:
            if not self._last_ids or time.monotonic() - refreshed >= self.nodes_refresh_s:
                await self._discover_nodes()
                refreshed = time.monotonic()
                if self.unavailable is not None:
                    log.info("telemetry reader: redis is back")
                    self._set_available(True)
            if not self._last_ids:
                await asyncio.sleep(min(1.0, self.nodes_refresh_s))
                continue
            response: Any = await self.redis.xread(
                self._last_ids,  # type: ignore[arg-type]
                count=100,
                block=self.block_ms,
            )
            for key, entries in response or []:
                for entry_id, fields in entries:
                    self._last_ids[key] = entry_id
                    self.publish(_entry_ms(entry_id), fields[stream.STREAM_FIELD])

    async def _discover_nodes(self) -> None:
        """Load the recent history of nodes not followed yet (not broadcast: it is history)."""
        names: Any = await self.redis.smembers(stream.NODES_KEY)
        new = [
            stream.stream_key(n)
            for n in sorted(names)
            if stream.stream_key(n) not in self._last_ids
        ]
        if not new:
            return
        now_s, now_us = await self.redis.time()
        since_ms = int(now_s) * 1000 + int(now_us) // 1000 - int(self.history_s * 1000)
        for key in new:
            entries: Any = await self.redis.xrange(key, min=f"{max(0, since_ms)}-0")
            self._ring.extend((_entry_ms(i), f[stream.STREAM_FIELD]) for i, f in entries)
            last: Any = entries[-1:] or await self.redis.xrevrange(key, count=1)
            self._last_ids[key] = last[0][0] if last else "0-0"
        self._ring = deque(sorted(self._ring, key=lambda e: e[0]))
        self._snapshots.clear()
