"""Relay a running job's events from its Redis stream into the database, and its ranks' log
files into the stream (as `log` events, for the WebSocket).

Metrics are batched: one INSERT per flush interval, not one per event.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import redis
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.db import transaction
from gpudeck.services import job_events
from gpudeck.services.checkpoints import is_complete
from gpudeck.services.job_events import CheckpointRecord, StreamReply, job_stream
from gpudeck.worker.events import publish

log = logging.getLogger(__name__)
FLUSH_INTERVAL_S = 1.0
READ_COUNT = 500
LOG_LINES_PER_PASS = 200


@dataclass(frozen=True)
class RankError:
    rank: int
    ts: float
    message: str
    traceback: str


@dataclass
class _Pending:
    metrics: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    step: int | None = None
    total: int | None = None
    peak_memory_bytes: int | None = None
    checkpoints: list[CheckpointRecord] = field(default_factory=list)

    def empty(self) -> bool:
        return (
            not (self.metrics or self.checkpoints)
            and self.step is None
            and (self.peak_memory_bytes is None)
        )


class EventRelay:
    def __init__(
        self,
        job_id: int,
        client: redis.Redis,
        factory: sessionmaker[Session],
        data_dir: Path,
        run_dir: Path,
        world_size: int,
    ) -> None:
        self.job_id = job_id
        self.client = client
        self.factory = factory
        self.data_dir = data_dir.resolve()
        self.run_dir = run_dir
        self.errors: list[RankError] = []
        self.last_loss: float | None = None
        self._last_id = "0-0"
        self._pending = _Pending()
        self._flushed_at = time.monotonic()
        self._log_offsets = dict.fromkeys(range(world_size), 0)

    def pump(self, block_ms: int = 0) -> int:
        """Read what is new on the stream (waiting up to block_ms); returns how many events."""
        try:
            reply = cast(
                StreamReply,
                self.client.xread(
                    {job_stream(self.job_id): self._last_id},
                    count=READ_COUNT,
                    block=block_ms or None,
                ),
            )
        except redis.RedisError:
            log.warning("job %s: cannot read its event stream", self.job_id, exc_info=True)
            time.sleep(block_ms / 1000)
            return 0
        count = 0
        for _, entries in reply or []:
            for entry_id, fields in entries:
                self._last_id = entry_id
                self._handle(fields)
                count += 1
        self._forward_logs()
        if time.monotonic() - self._flushed_at >= FLUSH_INTERVAL_S:
            self.flush()
        return count

    def drain(self) -> None:
        """Everything the ranks published before they exited, then one last flush."""
        while self.pump() >= READ_COUNT:
            pass
        self.flush()

    def flush(self) -> None:
        pending, self._pending = self._pending, _Pending()
        self._flushed_at = time.monotonic()
        if pending.empty():
            return
        with transaction(self.factory) as session:
            job_events.record_metrics(session, self.job_id, pending.metrics)
            job_events.record_progress(
                session,
                self.job_id,
                step=pending.step,
                total=pending.total,
                peak_memory_bytes=pending.peak_memory_bytes,
            )
            for record in pending.checkpoints:
                job_events.record_checkpoint(session, self.job_id, record)
            if pending.checkpoints:
                job_events.mark_pruned(session, self.job_id, self._steps_on_disk())

    def _handle(self, fields: dict[str, str]) -> None:
        kind = fields.get("type", "")
        try:
            data: dict[str, Any] = json.loads(fields.get("data", "{}"))
        except json.JSONDecodeError:
            return
        pending = self._pending
        if kind == "metrics":
            metrics = {k: float(v) for k, v in data.get("metrics", {}).items() if _number(v)}
            pending.metrics.append((int(data.get("step", 0)), metrics))
            loss = metrics.get("overall_loss", metrics.get("loss"))
            self.last_loss = loss if loss is not None else self.last_loss
        elif kind == "progress":
            pending.step = int(data.get("step", 0))
            pending.total = int(data["total"]) if data.get("total") is not None else None
        elif kind == "peak_memory":
            peak = int(data.get("max_memory_allocated_bytes", 0))
            pending.peak_memory_bytes = max(peak, pending.peak_memory_bytes or 0)
        elif kind == "checkpoint":
            record = self._checkpoint(int(data.get("step", 0)), str(data.get("path", "")))
            if record is not None:
                pending.checkpoints.append(record)
        elif kind == "error":
            self.errors.append(
                RankError(
                    int(fields.get("rank", "0")),
                    float(fields.get("ts", 0)),
                    str(data.get("message", "")),
                    str(data.get("traceback", "")),
                )
            )

    def _checkpoint(self, step: int, path: str) -> CheckpointRecord | None:
        directory = Path(path).resolve()
        if not directory.is_relative_to(self.data_dir) or not is_complete(directory):
            log.warning("job %s: ignoring checkpoint event for %s", self.job_id, path)
            return None
        files = sorted(p.name for p in directory.iterdir() if p.is_file())
        size = sum((directory / name).stat().st_size for name in files)
        relative = str(directory.relative_to(self.data_dir))
        return CheckpointRecord(step, relative, files, size, self.last_loss)

    def _steps_on_disk(self) -> list[int]:
        root = self.data_dir / "checkpoints" / str(self.job_id)
        steps = []
        for entry in root.glob("step_*") if root.is_dir() else ():
            suffix = entry.name.removeprefix("step_")
            if suffix.isdigit() and is_complete(entry):
                steps.append(int(suffix))
        return steps

    def _forward_logs(self) -> None:
        """New whole lines of each rank's log file become `log` events on the stream."""
        for rank, offset in self._log_offsets.items():
            path = self.run_dir / f"rank{rank}.log"
            try:
                with path.open("rb") as fh:
                    fh.seek(offset)
                    chunk = fh.read(256 * 1024)
            except FileNotFoundError:
                continue
            complete = chunk[: chunk.rfind(b"\n") + 1]
            self._log_offsets[rank] = offset + len(complete)
            lines = complete.decode(errors="replace").splitlines()
            for line in lines[-LOG_LINES_PER_PASS:]:
                publish(
                    self.client,
                    self.job_id,
                    "log",
                    {"message": line, "rank": rank, "source": "output"},
                )


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
