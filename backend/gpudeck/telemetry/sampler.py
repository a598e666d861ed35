"""The per-node sampler: every interval, read all devices once, append one `NodeSample` to the
node's capped Redis stream, and keep the device inventory (and external processes) current."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

import redis
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.db import transaction
from gpudeck.schemas.telemetry import DeviceSample, NodeSample
from gpudeck.services.inventory import DeviceInfo, upsert_inventory
from gpudeck.services.telemetry import live_placements
from gpudeck.telemetry import stream
from gpudeck.telemetry.provider import Provider, SampleContext

log = logging.getLogger(__name__)
INVENTORY_REFRESH_S = 30.0
ERROR_LOG_EVERY_S = 60.0
InventoryState = tuple[tuple[str, int, str, int, tuple[tuple[int, int | None], ...]], ...]


class Sampler:
    def __init__(
        self,
        provider: Provider,
        *,
        node: str,
        redis_client: redis.Redis,
        sessions: sessionmaker[Session],
        interval_s: float = 1.0,
        history_s: float = 900,
        inventory_refresh_s: float = INVENTORY_REFRESH_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.provider = provider
        self.node = node
        self.redis = redis_client
        self.sessions = sessions
        self.interval_s = interval_s
        self.maxlen = stream.stream_maxlen(history_s, interval_s)
        self.inventory_refresh_s = inventory_refresh_s
        self.clock = clock
        self.errors_pending = 0
        self._inventory_state: InventoryState | None = None
        self._inventory_at = float("-inf")
        self._last_error_log = float("-inf")

    def tick(self) -> NodeSample:
        """Take one sample and publish it; raises when Redis or the database fail."""
        started = time.perf_counter()
        sampled_at = datetime.fromtimestamp(self.clock(), UTC)
        placements = {}
        if self.provider.needs_placements:
            with self.sessions() as session:
                placements = live_placements(session, self.node)
        context = SampleContext(stream.managed_pids(self.redis, self.node), placements)
        devices = self.provider.read(context)
        sample = NodeSample(
            node=self.node,
            source=self.provider.source,
            sampled_at=sampled_at,
            interval_s=self.interval_s,
            devices=devices,
        )
        self._publish(sample, time.perf_counter() - started)
        self._maybe_upsert_inventory(devices)
        return sample

    def _publish(self, sample: NodeSample, duration_s: float) -> None:
        pipe = self.redis.pipeline(transaction=False)
        pipe.xadd(
            stream.stream_key(self.node),
            {stream.STREAM_FIELD: sample.model_dump_json()},
            maxlen=self.maxlen,
            approximate=True,
        )
        pipe.sadd(stream.NODES_KEY, self.node)
        key = stream.health_key(self.node)
        pipe.hset(
            key,
            mapping={
                "last_sample_at": sample.sampled_at.timestamp(),
                "last_duration_s": round(duration_s, 6),
                "source": sample.source,
            },
        )
        pipe.hincrby(key, "samples_total", 1)
        pipe.hincrby(key, "errors_total", self.errors_pending)
        pipe.execute()
        self.errors_pending = 0

    def _maybe_upsert_inventory(self, devices: list[DeviceSample]) -> None:
        known = {d.uuid: d for d in self.provider.inventory()}
        infos = [
            DeviceInfo(
                uuid=d.uuid,
                index=d.index,
                name=d.name,
                memory_total_bytes=d.memory_total_bytes,
                external_processes=[
                    {"pid": p.pid, "used_memory_bytes": p.used_memory_bytes}  # type: ignore[dict-item]
                    for p in d.processes
                    if not p.managed
                ],
            )
            for d in devices
            if d.uuid in known
        ]
        state: InventoryState = tuple(
            (i.uuid, i.index, i.name, i.memory_total_bytes,
             tuple((p["pid"], p["used_memory_bytes"]) for p in i.external_processes))
            for i in infos
        )  # fmt: skip
        now = time.monotonic()
        if state == self._inventory_state and now - self._inventory_at < self.inventory_refresh_s:
            return
        with transaction(self.sessions) as session:
            upsert_inventory(session, self.node, self.provider.source, infos)
        self._inventory_state, self._inventory_at = state, now

    def run(self, stop: threading.Event) -> None:
        """Sample on a fixed schedule until `stop` is set; a failed tick is counted and logged,
        never fatal (Redis or Postgres restarting must not kill the sampler)."""
        next_at = time.monotonic()
        while not stop.is_set():
            try:
                self.tick()
            except Exception as exc:
                self._on_error(exc)
            next_at += self.interval_s
            now = time.monotonic()
            if next_at < now:  # fell behind: skip the missed ticks rather than burst
                next_at = now + self.interval_s - (now - next_at) % self.interval_s
            stop.wait(next_at - now)

    def _on_error(self, exc: Exception) -> None:
        self.errors_pending += 1
        now = time.monotonic()
        if now - self._last_error_log >= ERROR_LOG_EVERY_S:
            self._last_error_log = now
            log.exception("sampling failed (logged at most once a minute): %s", exc)
        key = stream.health_key(self.node)
        try:
            pipe = self.redis.pipeline(transaction=False)
            pipe.hincrby(key, "errors_total", self.errors_pending)
            pipe.hset(key, "last_error", f"{type(exc).__name__}: {exc}"[:500])
            pipe.execute()
            self.errors_pending = 0
        except redis.RedisError:
            pass  # counted locally; published with the next sample that gets through
