"""What a job kind's `train(ctx, config)` gets: its place in the job and a way to talk out.

Events go to a Redis stream (or, without Redis, to `<run_dir>/events.jsonl`), one flat record
each: `type`, `job_id`, `rank`, `ts` (unix seconds) and `data` (a JSON object). See
docs/trainer.md for the types and their data.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
import torch.distributed as dist

from gpudeck.trainer import checkpoint

log = logging.getLogger(__name__)
STREAM_MAXLEN = 10_000  # approximate cap per job stream; the worker persists what it needs


class EventSink(Protocol):
    def publish(self, fields: dict[str, str]) -> None: ...

    def close(self) -> None: ...


class JsonlSink:
    """Appends one JSON line per event; O_APPEND keeps lines from several ranks whole."""

    def __init__(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def publish(self, fields: dict[str, str]) -> None:
        os.write(self._fd, (json.dumps(fields) + "\n").encode())

    def close(self) -> None:
        os.close(self._fd)


class RedisSink:
    """XADD to the job's stream. A Redis hiccup loses an event, never the training run."""

    def __init__(self, url: str, stream: str) -> None:
        import redis  # only ranks that publish to Redis need it

        self._client = redis.Redis.from_url(url)
        self._stream = stream

    def publish(self, fields: dict[str, str]) -> None:
        try:
            self._client.xadd(self._stream, fields, maxlen=STREAM_MAXLEN, approximate=True)  # type: ignore[arg-type]
        except Exception:
            log.warning("could not publish an event to %s", self._stream, exc_info=True)

    def close(self) -> None:
        self._client.close()


def event_fields(
    event_type: str, job_id: int, rank: int, data: Mapping[str, Any]
) -> dict[str, str]:
    """One event as flat strings (Redis stream fields); `data` is a JSON object."""
    return {
        "type": event_type,
        "job_id": str(job_id),
        "rank": str(rank),
        "ts": f"{time.time():.6f}",
        "data": json.dumps(data),
    }


class StopFlag:
    """Set from a signal handler: a plain attribute, so the handler takes no lock."""

    def __init__(self) -> None:
        self.requested = False

    def set(self, *_: object) -> None:
        self.requested = True


@dataclass
class TrainContext:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    job_id: int
    config: Mapping[str, Any]
    checkpoint_dir: Path
    resume_from: Path | None
    data_dir: Path
    run_dir: Path
    sink: EventSink
    keep_checkpoints: int = 3
    stop_flag: StopFlag = field(default_factory=StopFlag)
    # How many should_stop() calls share one all_reduce: on CUDA each check syncs the stream.
    stop_check_every: int = 1
    _stop_calls: int = 0
    _stopped: bool = False

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def publish(self, event_type: str, data: Mapping[str, Any]) -> None:
        """Publish from this rank, whichever it is (report/progress publish from rank 0 only)."""
        self.sink.publish(event_fields(event_type, self.job_id, self.rank, data))

    def report(self, step: int, metrics: Mapping[str, float]) -> None:
        if self.is_main:
            self.publish("metrics", {"step": step, "metrics": dict(metrics)})

    def progress(self, step: int, total: int) -> None:
        if self.is_main:
            self.publish("progress", {"step": step, "total": total})

    def log(self, msg: str) -> None:
        self.publish("log", {"message": msg})

    def report_peak_memory(self, step: int) -> None:
        """On CUDA, every rank publishes its device's peak allocation (checks the estimate)."""
        if self.device.type != "cuda":
            return
        self.publish(
            "peak_memory",
            {
                "step": step,
                "max_memory_allocated_bytes": torch.cuda.max_memory_allocated(self.device),
                "max_memory_reserved_bytes": torch.cuda.max_memory_reserved(self.device),
            },
        )

    def save_checkpoint(
        self,
        step: int,
        sae_tensors: Mapping[str, torch.Tensor],
        cfg_json: Mapping[str, Any],
        trainer_state_tensors: Mapping[str, torch.Tensor],
        trainer_state_json: Mapping[str, Any],
    ) -> Path | None:
        """Rank 0 writes step_<n> atomically and announces it; other ranks return None."""
        if not self.is_main:
            return None
        path = checkpoint.write_checkpoint(
            self.checkpoint_dir,
            step,
            weights=sae_tensors,
            cfg=cfg_json,
            state_tensors=trainer_state_tensors,
            state=trainer_state_json,
            keep=self.keep_checkpoints,
        )
        self.publish("checkpoint", {"step": step, "path": str(path)})
        return path

    def should_stop(self) -> bool:
        """True once any rank was asked to stop; every rank gets the same answer together.

        Call it at the same points on every rank: it is a collective (all_reduce MAX).
        """
        if self._stopped:
            return True
        self._stop_calls += 1
        if self._stop_calls % self.stop_check_every:
            return False
        flag = torch.tensor([1.0 if self.stop_flag.requested else 0.0], device=self.device)
        if dist.is_initialized() and self.world_size > 1:
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        self._stopped = bool(flag.item() > 0)
        return self._stopped
