"""What a job kind's `train(ctx, config)` gets: its place in the job and a way to talk out.

Events go to a Redis stream (or, without Redis, to `<run_dir>/events.jsonl`), one flat record
each in the wire format of engine.events. See docs/engine.md for the types and their data.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
import torch.distributed as dist

from gpudeck.engine import checkpoint, events, kind_api_v1
from gpudeck.engine.events import STREAM_MAXLEN

log = logging.getLogger(__name__)


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
    """XADD to the job's stream. A Redis outage or restart delays events, never the training
    run, and loses none below a bound.

    An event Redis does not take waits in memory (at most MAX_UNSENT; beyond that the oldest
    go, with a log line) and goes out with the next publish (tried at most every RETRY_S) or at
    close (waiting up to CLOSE_WAIT_S for Redis). A reconnection means the server may have
    restarted and lost what the worker had not read yet: the events of the last
    RESEND_WINDOW_S are sent again (the worker records each metric step once).
    """

    MAX_UNSENT = 100_000
    RETRY_S = 0.5
    RESEND_WINDOW_S = 10.0
    CLOSE_WAIT_S = 60.0

    def __init__(self, url: str, stream: str) -> None:
        import redis  # only ranks that publish to Redis need it
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self._connects = 0
        self._client = redis.Redis.from_url(
            url,
            redis_connect_func=self._on_connect,
            # One quick reconnect per publish: the step must not wait out redis-py's backoff.
            retry=Retry(NoBackoff(), 1),
            socket_connect_timeout=1.0,
        )
        self._stream = stream
        self._unsent: deque[dict[str, str]] = deque()
        self._sent: deque[tuple[float, dict[str, str]]] = deque()  # (monotonic, fields)
        self._retry_at = 0.0
        self._dropped = 0

    def _on_connect(self, connection: Any) -> None:
        connection.on_connect()
        self._connects += 1
        if self._connects > 1:  # not the first connection: resend what the server may lack
            horizon = time.monotonic() - self.RESEND_WINDOW_S
            recent = [fields for at, fields in self._sent if at >= horizon]
            self._unsent.extendleft(reversed(recent))
            self._sent.clear()

    def publish(self, fields: dict[str, str]) -> None:
        self._unsent.append(fields)
        if len(self._unsent) > self.MAX_UNSENT:
            self._unsent.popleft()
            self._dropped += 1
            if self._dropped == 1:
                log.error("over %d events wait for Redis: dropping the oldest", self.MAX_UNSENT)
        if time.monotonic() >= self._retry_at:
            self._send()

    def _send(self) -> bool:
        """Send what waits, oldest first; False (and retry later) if Redis did not take it."""
        while self._unsent:
            # Taken off first: a reconnection inside xadd puts recent events ahead of it.
            fields = self._unsent.popleft()
            try:
                self._client.xadd(self._stream, fields, maxlen=STREAM_MAXLEN, approximate=True)  # type: ignore[arg-type]
            except Exception as exc:
                self._unsent.appendleft(fields)
                if self._retry_at == 0.0:  # the first failure of this outage
                    log.warning("cannot publish to %s (%s): events wait", self._stream, exc)
                self._retry_at = time.monotonic() + self.RETRY_S
                return False
            now = time.monotonic()
            self._sent.append((now, fields))
            while self._sent and self._sent[0][0] < now - self.RESEND_WINDOW_S:
                self._sent.popleft()
        self._retry_at = 0.0
        return True

    def close(self) -> None:
        deadline = time.monotonic() + self.CLOSE_WAIT_S
        while not self._send() and time.monotonic() < deadline:
            time.sleep(self.RETRY_S)
        if self._unsent or self._dropped:
            log.error(
                "%d events never reached Redis (%s)",
                len(self._unsent) + self._dropped,
                self._stream,
            )
        self._client.close()


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
    # The kind's name, for the lines the engine writes into the job's log about it.
    kind: str = ""
    _stop_calls: int = 0
    _stopped: bool = False
    _warned_v1: bool = False  # a version-1 call's warning is written once per job

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def publish(self, event_type: str, data: Mapping[str, Any]) -> None:
        """Publish from this rank, whichever it is (report/progress publish from rank 0 only)."""
        self.sink.publish(events.encode(event_type, self.job_id, self.rank, data))

    def report(self, step: int, metrics: Mapping[str, float]) -> None:
        if self.is_main:
            self.publish("metrics", {"step": step, "metrics": dict(metrics)})
            # The same figures as a line of rank 0's log, so the log tells the run's story.
            figures = " ".join(f"{name}={value:.5g}" for name, value in metrics.items())
            log.info("step %d: %s", step, figures)

    def progress(self, step: int, total: int) -> None:
        if self.is_main:
            self.publish("progress", {"step": step, "total": total})

    def log(self, msg: str) -> None:
        self.publish("log", {"message": msg})
        log.info("%s", msg)

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
        *v1_args: Any,
        tensor_files: checkpoint.TensorFiles | None = None,
        json_files: checkpoint.JsonFiles | None = None,
        **v1_kwargs: Any,
    ) -> Path | None:
        """Rank 0 writes step_<n> atomically with the kind's own files and announces it;
        other ranks return None (gather what rank 0 needs before calling it).

        `tensor_files`: file name -> tensors, each written as one safetensors file;
        `json_files`: file name -> a JSON object. The names are the kind's (docs/kinds.md).
        Kind API version 1's positional call still writes what it wrote (engine/kind_api_v1.py),
        with a warning in the job's log, once per job."""
        if tensor_files is None or v1_args or v1_kwargs:
            tensor_files, json_files = self._version_1_files(step, v1_args, v1_kwargs, tensor_files)
        if not self.is_main:
            return None
        path = checkpoint.write_checkpoint(
            self.checkpoint_dir,
            step,
            tensor_files=tensor_files,
            json_files=json_files,
            keep=self.keep_checkpoints,
        )
        self.publish("checkpoint", {"step": step, "path": str(path)})
        log.info("step %d: checkpoint written to %s", step, path)
        return path

    def _version_1_files(
        self,
        step: int,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        tensor_files: checkpoint.TensorFiles | None,
    ) -> tuple[checkpoint.TensorFiles, checkpoint.JsonFiles]:
        """The files of kind API version 1's call, and its warning in the job's log (rank 0,
        once per job: a kind checkpoints many times)."""
        if tensor_files is not None or not (args or kwargs):  # neither version's call
            raise TypeError(
                "the call is save_checkpoint(step, *, tensor_files, json_files); got "
                f"{len(args)} more positional arguments and the keywords {sorted(kwargs)}"
            )
        files = kind_api_v1.checkpoint_files(step, args, kwargs)
        if self.is_main and not self._warned_v1:
            self._warned_v1 = True
            self.log(kind_api_v1.SAVE_WARNING.format(kind=self.kind))
        return files

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
