"""Relay a running job's events from its Redis stream into the database, and its ranks' log
files into the stream (as `log` events, for the WebSocket).

Metrics are batched: one INSERT per flush interval, not one per event, written by the relay's
own writer thread so that a database outage never stalls the runner's loop (which watches the
ranks). While the database is unreachable the writer keeps the batch and retries with backoff;
up to MAX_PENDING_METRICS rows wait in memory, and only rows beyond that bound are dropped, with
a log line naming their steps. Metrics are recorded once per step: a rank that re-sends its
recent events after a Redis restart (see trainer.context.RedisSink) adds no duplicate row, and
a batch retried after a failed write replaces the rows that write may have committed.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import redis
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.db import transaction
from gpudeck.engine.events import decode
from gpudeck.services.jobs import events as job_events
from gpudeck.services.jobs.checkpoints import is_complete
from gpudeck.services.jobs.events import CheckpointRecord, StreamReply, job_stream
from gpudeck.worker.events import send
from gpudeck.worker.map_progress import MapProgress
from gpudeck.worker.retry import Backoff, store_unreachable, until_stored

log = logging.getLogger(__name__)
FLUSH_INTERVAL_S = 1.0
READ_COUNT = 500
LOG_LINES_PER_PASS = 200
LOG_READ_BYTES = 256 * 1024  # of each rank log per pass
LOG_LINE_CHARS = 8192  # of one line in a live log event
MAX_PENDING_METRICS = 100_000  # about 100 MB at worst; hours of metrics at usual intervals
WARN_EVERY_S = 30.0


@dataclass(frozen=True)
class RankError:
    rank: int
    ts: float
    message: str
    traceback: str


# The rate is measured over at least this long: the first steps of a run (compiling, warming
# caches) are not its pace.
RATE_WINDOW_S = 10.0


class ProgressRate:
    """Steps a second over this run: from the first progress event this relay saw (a resumed
    job's first step is its checkpoint's, not 0) to the newest, once they are RATE_WINDOW_S
    apart."""

    def __init__(self) -> None:
        self._first: tuple[float, int] | None = None

    def add(self, now: float, step: int) -> float | None:
        if self._first is None:
            self._first = (now, step)
            return None
        since, first_step = self._first
        if now - since < RATE_WINDOW_S or step <= first_step:
            return None
        return (step - first_step) / (now - since)


@dataclass
class _Pending:
    metrics: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    step: int | None = None
    total: int | None = None
    rate: float | None = None
    peak_memory_bytes: int | None = None
    checkpoints: list[CheckpointRecord] = field(default_factory=list)
    # Some rows were in a write that failed: it may have committed all the same.
    retried: bool = False

    def empty(self) -> bool:
        return (
            not (self.metrics or self.checkpoints)
            and self.step is None
            and (self.peak_memory_bytes is None)
        )

    def prepend(self, older: _Pending) -> None:
        """Put back a batch that could not be written, ahead of what arrived since."""
        self.metrics[:0] = older.metrics
        self.retried = True
        self.checkpoints[:0] = older.checkpoints
        if self.step is None:
            self.step, self.total, self.rate = older.step, older.total, older.rate
        if older.peak_memory_bytes is not None:
            self.peak_memory_bytes = max(older.peak_memory_bytes, self.peak_memory_bytes or 0)


@dataclass
class _Dropped:
    """Metric rows dropped above the bound (the database was unreachable for too long)."""

    count: int = 0
    first_step: int | None = None
    last_step: int | None = None

    def add(self, steps: list[int]) -> None:
        low, high = min(steps), max(steps)
        self.count += len(steps)
        self.first_step = low if self.first_step is None else min(self.first_step, low)
        self.last_step = high if self.last_step is None else max(self.last_step, high)


class EventRelay:
    """Call pump() from the runner's loop and drain() once the ranks are gone."""

    def __init__(
        self,
        job_id: int,
        client: redis.Redis,
        factory: sessionmaker[Session],
        data_dir: Path,
        run_dir: Path,
        world_size: int,
        node: str | None = None,
    ) -> None:
        self.job_id = job_id
        self.node = node  # where this relay runs: the job's first node, which rank 0's files are on
        self.client = client
        self.factory = factory
        self.data_dir = data_dir.resolve()
        self.run_dir = run_dir
        self.errors: list[RankError] = []
        self.last_loss: float | None = None
        self._last_id = "0-0"
        self._lock = threading.Lock()  # _pending and _dropped: the runner's loop and the writer
        self._pending = _Pending()
        self._dropped = _Dropped()
        self._metric_steps: set[int] = set()
        # A job that runs again (preempted, requeued, its follower restarted) may redo steps
        # its last run already reported (it resumes from its newest checkpoint, which may be
        # older than its last metric point): one curve keeps each step's first point.
        self._recorded_through = self._stored_through()
        self._progress_step = 0
        self._rate = ProgressRate()
        self._map_progress = MapProgress()
        self._log_offsets = dict.fromkeys(range(world_size), 0)
        self._redis_warned_at: float | None = None
        self._closing = threading.Event()
        self._writer = threading.Thread(
            target=self._write_loop, name=f"gpudeck-relay-{job_id}", daemon=True
        )
        self._writer.start()

    def _stored_through(self) -> int:
        try:
            with self.factory() as session:
                last = job_events.last_metric_step(session, self.job_id)
        except SQLAlchemyError as exc:  # a database outage: at worst a redone step twice
            log.warning("job %s: its recorded steps unread: %s", self.job_id, exc)
            return -1
        return -1 if last is None else last

    def pump(self, block_ms: int = 0) -> int:
        """Read what is new on the stream (waiting up to block_ms); returns how many events."""
        try:
            count = self._read(block_ms)
        except redis.RedisError as exc:
            self._warn_redis(exc)
            time.sleep(block_ms / 1000)
            return 0
        self._redis_warned_at = None
        self._forward_logs()
        return count

    def drain(self) -> None:
        """Everything the ranks published before they exited, then the last writes: both wait
        for their store to come back if it is down."""
        until_stored(self._read_rest, f"job {self.job_id}: reading its last events")
        self._forward_logs()
        self._closing.set()
        self._writer.join()
        if self._dropped.count:
            log.error(
                "job %s: %d metric rows (steps %s..%s) were dropped: the database was "
                "unreachable for longer than %d rows could wait",
                self.job_id,
                self._dropped.count,
                self._dropped.first_step,
                self._dropped.last_step,
                MAX_PENDING_METRICS,
            )

    def _read(self, block_ms: int) -> int:
        reply = cast(
            StreamReply,
            self.client.xread(
                {job_stream(self.job_id): self._last_id},
                count=READ_COUNT,
                block=block_ms or None,
            ),
        )
        count = 0
        for _, entries in reply or []:
            for entry_id, fields in entries:
                self._last_id = entry_id
                self._handle(fields)
                count += 1
        return count

    def _read_rest(self) -> None:
        while self._read(0) >= READ_COUNT:
            pass

    def _warn_redis(self, exc: redis.RedisError) -> None:
        now = time.monotonic()
        if self._redis_warned_at is None or now - self._redis_warned_at >= WARN_EVERY_S:
            log.warning("job %s: cannot read its event stream: %s", self.job_id, exc)
            self._redis_warned_at = now

    # --- the writer thread ---------------------------------------------------------------

    def _write_loop(self) -> None:
        """Every FLUSH_INTERVAL_S, write what is pending; on an outage keep it and back off.
        Once closing, write until nothing is left, then return."""
        backoff = Backoff()
        outage_since: float | None = None
        while True:
            closing = self._closing.wait(FLUSH_INTERVAL_S)
            with self._lock:
                batch, self._pending = self._pending, _Pending()
            if not batch.empty():
                try:
                    self._write(batch)
                except Exception as exc:
                    if not store_unreachable(exc):
                        log.exception("job %s: dropping a batch it cannot record", self.job_id)
                        continue
                    self._put_back(batch)
                    if outage_since is None:
                        outage_since = time.monotonic()
                        log.warning(
                            "job %s: database unreachable; keeping its events to retry (%s)",
                            self.job_id,
                            type(exc).__name__,
                        )
                    backoff.wait()
                    continue
                if outage_since is not None:
                    log.info(
                        "job %s: events recorded after %.1f s of database outage",
                        self.job_id,
                        time.monotonic() - outage_since,
                    )
                    outage_since = None
                    backoff.reset()
            if closing:
                with self._lock:
                    if self._pending.empty():
                        return

    def _write(self, pending: _Pending) -> None:
        with transaction(self.factory) as session:
            job_events.record_metrics(
                session, self.job_id, pending.metrics, replace=pending.retried
            )
            job_events.record_progress(
                session,
                self.job_id,
                step=pending.step,
                total=pending.total,
                rate=pending.rate,
                peak_memory_bytes=pending.peak_memory_bytes,
            )
            for record in pending.checkpoints:
                job_events.record_checkpoint(session, self.job_id, record)
            if pending.checkpoints:
                job_events.mark_pruned(session, self.job_id, self._steps_on_disk())

    def _put_back(self, batch: _Pending) -> None:
        with self._lock:
            self._pending.prepend(batch)
            self._bound()

    def _bound(self) -> None:
        """Drop the oldest metric rows above MAX_PENDING_METRICS (caller holds the lock)."""
        excess = len(self._pending.metrics) - MAX_PENDING_METRICS
        if excess <= 0:
            return
        dropped = self._pending.metrics[:excess]
        del self._pending.metrics[:excess]
        if not self._dropped.count:
            log.error(
                "job %s: more than %d metric rows wait for the database: dropping the oldest",
                self.job_id,
                MAX_PENDING_METRICS,
            )
        self._dropped.add([step for step, _ in dropped])

    # --- events ---------------------------------------------------------------------------

    def _handle(self, fields: dict[str, str]) -> None:
        event = decode(fields)
        if not event.intact:
            return
        kind, data = event.type, event.data
        if kind == "error":
            self.errors.append(
                RankError(
                    event.rank,
                    event.ts,
                    str(data.get("message", "")),
                    str(data.get("traceback", "")),
                )
            )
            return
        record = self._checkpoint(data) if kind == "checkpoint" else None
        with self._lock:
            self._add(kind, data, record)

    def _add(self, kind: str, data: dict[str, Any], record: CheckpointRecord | None) -> None:
        pending = self._pending
        if kind == "metrics":
            step = int(data.get("step", 0))
            if step in self._metric_steps or step <= self._recorded_through:
                return  # a re-sent event, or a step an earlier run recorded already
            self._metric_steps.add(step)
            metrics = {k: float(v) for k, v in data.get("metrics", {}).items() if _number(v)}
            pending.metrics.append((step, metrics))
            self._bound()
            loss = metrics.get("overall_loss", metrics.get("loss"))
            self.last_loss = loss if loss is not None else self.last_loss
        elif kind == "progress":
            total = int(data["total"]) if data.get("total") is not None else None
            self._set_progress(int(data.get("step", 0)), total)
        elif (chunks := self._map_progress.feed(kind, data)) is not None:
            self._set_progress(*chunks)
        elif kind == "peak_memory":
            peak = int(data.get("max_memory_allocated_bytes", 0))
            pending.peak_memory_bytes = max(peak, pending.peak_memory_bytes or 0)
        elif record is not None:
            pending.checkpoints.append(record)

    def _set_progress(self, step: int, total: int | None) -> None:
        if step < self._progress_step:
            return  # a re-sent older event: progress never goes back
        self._progress_step = self._pending.step = step
        self._pending.total = total
        self._pending.rate = self._rate.add(time.monotonic(), step) or self._pending.rate

    def _checkpoint(self, data: dict[str, Any]) -> CheckpointRecord | None:
        step, path = int(data.get("step", 0)), str(data.get("path", ""))
        directory = Path(path).resolve()
        if not directory.is_relative_to(self.data_dir) or not is_complete(directory):
            log.warning("job %s: ignoring checkpoint event for %s", self.job_id, path)
            return None
        # Hidden names are GPUDeck's own markers, not checkpoint files.
        sizes = {
            p.name: p.stat().st_size
            for p in sorted(directory.iterdir())
            if p.is_file() and p.name[0] != "."
        }
        relative = str(directory.relative_to(self.data_dir))
        return CheckpointRecord(
            step,
            relative,
            list(sizes),
            sum(sizes.values()),
            self.last_loss,
            node=self.node,
            node_path=str(directory),
            file_sizes=sizes,
        )

    def _steps_on_disk(self) -> list[int]:
        root = self.data_dir / "checkpoints" / str(self.job_id)
        steps = []
        for entry in root.glob("step_*") if root.is_dir() else ():
            suffix = entry.name.removeprefix("step_")
            if suffix.isdigit() and is_complete(entry):
                steps.append(int(suffix))
        return steps

    def _forward_logs(self) -> None:
        """New whole lines of each rank's log file become `log` events on the stream. A line
        that Redis did not take is sent again on the next pass (its offset is not advanced)."""
        for rank, offset in self._log_offsets.items():
            path = self.run_dir / f"rank{rank}.log"
            try:
                with path.open("rb") as fh:
                    fh.seek(offset)
                    chunk = fh.read(LOG_READ_BYTES)
            except FileNotFoundError:
                continue
            complete = chunk[: chunk.rfind(b"\n") + 1]
            if not complete and len(chunk) == LOG_READ_BYTES:
                # A line longer than a read: its start goes out marked, and the pass moves
                # past it instead of waiting for a newline that no read can reach.
                complete = chunk
            lines = [_shortened(line) for line in complete.decode(errors="replace").splitlines()]
            try:
                for line in lines[-LOG_LINES_PER_PASS:]:
                    data = {"message": line, "rank": rank, "source": "output"}
                    send(self.client, self.job_id, "log", data)
            except redis.RedisError as exc:
                self._warn_redis(exc)
                return
            self._log_offsets[rank] = offset + len(complete)


def _shortened(line: str) -> str:
    """A log event carries at most LOG_LINE_CHARS of a line (the stored log keeps it whole)."""
    if len(line) <= LOG_LINE_CHARS:
        return line
    return f"{line[:LOG_LINE_CHARS]} [gpudeck: {len(line) - LOG_LINE_CHARS} more characters cut]"


def _number(value: object) -> bool:
    """A finite number (JSONB has no NaN or Infinity; the trainer fails a job whose loss is)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
