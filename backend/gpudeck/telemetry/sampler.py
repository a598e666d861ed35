"""The per-node sampler: every interval, read all devices once, hold each sharing job to its
memory reservation (telemetry/watchdog.py, telemetry/enforce.py), append one `NodeSample` to the
node's capped Redis stream, and keep the device inventory (and external processes) current."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Protocol

import redis

from gpudeck.telemetry import stream
from gpudeck.telemetry.devices import DeviceInfo
from gpudeck.telemetry.enforce import enforce
from gpudeck.telemetry.provider import Placement, Provider, SampleContext
from gpudeck.telemetry.schema import DeviceSample, NodeSample, Source
from gpudeck.telemetry.watchdog import Watchdog, device_uses

log = logging.getLogger(__name__)
INVENTORY_REFRESH_S = 30.0
ERROR_LOG_EVERY_S = 60.0
InventoryState = tuple[tuple[str, int, str, int, tuple[tuple[int, int | None], ...]], ...]


class SamplerStore(Protocol):
    """What the sampler reads from and keeps in the database. Its entry point (cli/sampler.py)
    passes the services' implementation, so telemetry/ itself knows no database."""

    def placements(self, node: str) -> Mapping[str, Placement]:
        """Device uuid -> the job holding it on `node` (the live allocations)."""
        ...

    def save_inventory(self, node: str, source: Source, devices: Sequence[DeviceInfo]) -> None:
        """Upsert the node and its devices, committed; raises when the database fails."""
        ...

    def record_peaks(self, peaks: Mapping[int, int]) -> None:
        """Raise each job's measured peak memory per device to at least the given bytes."""
        ...

    def record_rank_peaks(self, peaks: Mapping[tuple[int, int], int]) -> None:
        """Raise each (job, rank)'s measured peak device memory to at least the given bytes."""
        ...


class SharingSource(Protocol):
    """Which jobs share this node's devices, and what each reserved. The database side of
    sharing provides it; without one, no job is held to a reservation (every job is exclusive)."""

    def reservations(self, node: str) -> Mapping[int, int]:
        """Job id -> the bytes it reserved on each of its devices on `node`."""
        ...

    def shared_placements(self, node: str) -> Mapping[str, Sequence[Placement]]:
        """Device uuid -> the sharing jobs placed on it (read for simulated devices only)."""
        ...


def job_peaks(sample: NodeSample) -> dict[int, int]:
    """Each job's largest per-device memory in this sample: NVML's per-process memory on GPUs;
    on simulated devices the rank's peak resident memory, the memory it really used."""
    peaks: dict[int, int] = {}
    for device in sample.devices:
        for p in device.processes:
            measured = (
                p.host_peak_rss_bytes if sample.source == "simulated" else p.used_memory_bytes
            )
            if p.job_id is not None and measured is not None:
                peaks[p.job_id] = max(peaks.get(p.job_id, 0), measured)
    return peaks


def rank_device_peaks(sample: NodeSample) -> dict[tuple[int, int], int]:
    """Each (job, rank)'s device memory in this sample, from NVML's per-process figure (none on
    simulated devices: a rank's memory there is host memory, which its job measures itself)."""
    peaks: dict[tuple[int, int], int] = {}
    if sample.source == "simulated":
        return peaks
    for device in sample.devices:
        for p in device.processes:
            if p.job_id is not None and p.rank is not None and p.used_memory_bytes is not None:
                key = (p.job_id, p.rank)
                peaks[key] = max(peaks.get(key, 0), p.used_memory_bytes)
    return peaks


class Sampler:
    def __init__(
        self,
        provider: Provider,
        *,
        node: str,
        redis_client: redis.Redis,
        store: SamplerStore,
        interval_s: float = 1.0,
        history_s: float = 900,
        inventory_refresh_s: float = INVENTORY_REFRESH_S,
        clock: Callable[[], float] = time.time,
        sharing: SharingSource | None = None,
        watchdog: Watchdog | None = None,
    ) -> None:
        self.provider = provider
        self.node = node
        self.redis = redis_client
        self.store = store
        self.interval_s = interval_s
        self.maxlen = stream.stream_maxlen(history_s, interval_s)
        self.inventory_refresh_s = inventory_refresh_s
        self.clock = clock
        self.sharing = sharing
        self.watchdog = watchdog or Watchdog()
        self.errors_pending = 0
        self._inventory_state: InventoryState | None = None
        self._inventory_at = float("-inf")
        self._last_error_log = float("-inf")
        self._peaks: dict[int, int] = {}  # job id -> the peak written for it
        self._rank_peaks: dict[tuple[int, int], int] = {}  # (job, rank) -> the peak written

    def tick(self) -> NodeSample:
        """Take one sample and publish it; raises when Redis or the database fail."""
        started = time.perf_counter()
        sampled_at = datetime.fromtimestamp(self.clock(), UTC)
        devices = self._read_and_enforce()
        sample = NodeSample(
            node=self.node,
            source=self.provider.source,
            sampled_at=sampled_at,
            interval_s=self.interval_s,
            devices=devices,
        )
        self._publish(sample, time.perf_counter() - started)
        self._maybe_upsert_inventory(devices)
        self._record_peaks(sample)
        return sample

    def _context(self) -> SampleContext:
        placements: Mapping[str, Placement] = {}
        shared: Mapping[str, Sequence[Placement]] = {}
        reservations: Mapping[int, int] = {}
        if self.provider.needs_placements:
            placements = self.store.placements(self.node)
        if self.sharing is not None:
            reservations = self.sharing.reservations(self.node)
            if self.provider.needs_placements:
                shared = self.sharing.shared_placements(self.node)
        managed = stream.managed_pids(self.redis, self.node)
        return SampleContext(managed, placements, reservations, shared)

    def _read_and_enforce(self) -> list[DeviceSample]:
        """Read every device, then kill what runs over its reservation at once: before the
        publish and the database writes, so their failures cannot delay a kill."""
        context = self._context()
        devices = self.provider.read(context)
        uses = device_uses(self.node, devices)
        for decision in self.watchdog.observe(uses, context.reservations):
            enforce(self.redis, decision, context.managed_pids)
        return devices

    def _record_peaks(self, sample: NodeSample) -> None:
        """Write a job's peak only when it grew: one UPDATE per new high, not per sample."""
        grown = {
            job: peak for job, peak in job_peaks(sample).items() if peak > self._peaks.get(job, 0)
        }
        if grown:
            self.store.record_peaks(grown)
            self._peaks.update(grown)
        ranks = {
            key: peak
            for key, peak in rank_device_peaks(sample).items()
            if peak > self._rank_peaks.get(key, 0)
        }
        if ranks:
            self.store.record_rank_peaks(ranks)
            self._rank_peaks.update(ranks)

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
        self.store.save_inventory(self.node, self.provider.source, infos)
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
