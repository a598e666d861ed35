"""The entry point of one rank process: `run_rank(spec)`.

The launcher starts one process per device with torchrun's environment (RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, CUDA_VISIBLE_DEVICES narrowed to the
rank's device) and calls run_rank in each. It joins the process group, validates the config
with the kind's model, runs `kind.resolve_train()(ctx, config)` and tears down.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import threading
import traceback
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import torch
import torch.distributed as dist

from gpudeck.trainer import kinds
from gpudeck.trainer.context import (
    EventSink,
    JsonlSink,
    RedisSink,
    StopFlag,
    TrainContext,
    event_fields,
)

log = logging.getLogger(__name__)
COLLECTIVE_TIMEOUT = timedelta(minutes=10)  # a peer that died is noticed after this at worst
TEARDOWN_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class RankSpec:
    job_id: int
    kind: str
    config: dict[str, Any]
    run_dir: str
    data_dir: str
    checkpoint_dir: str
    resume_from: str | None = None
    events_redis_url: str | None = None
    events_stream: str = ""
    device_type: Literal["cpu", "cuda"] = "cpu"
    num_threads: int = 1
    keep_checkpoints: int = 3


def _env_int(name: str) -> int:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError) as exc:
        raise RuntimeError(f"{name} is not set to an integer: launch ranks like torchrun") from exc


def _open_sink(spec: RankSpec) -> EventSink:
    if spec.events_redis_url:
        return RedisSink(
            spec.events_redis_url, spec.events_stream or f"gpudeck:job:{spec.job_id}:events"
        )
    return JsonlSink(Path(spec.run_dir) / "events.jsonl")


def _device(device_type: str) -> torch.device:
    if device_type == "cuda":
        torch.cuda.set_device(0)  # CUDA_VISIBLE_DEVICES leaves this rank exactly one device
        return torch.device("cuda", 0)
    return torch.device("cpu")


def _make_context(spec: RankSpec, sink: EventSink, stop_flag: StopFlag) -> TrainContext:
    device = _device(spec.device_type)
    return TrainContext(
        rank=_env_int("RANK"),
        world_size=_env_int("WORLD_SIZE"),
        local_rank=_env_int("LOCAL_RANK"),
        device=device,
        job_id=spec.job_id,
        config=spec.config,
        checkpoint_dir=Path(spec.checkpoint_dir),
        resume_from=Path(spec.resume_from) if spec.resume_from else None,
        data_dir=Path(spec.data_dir),
        run_dir=Path(spec.run_dir),
        sink=sink,
        keep_checkpoints=spec.keep_checkpoints,
        stop_flag=stop_flag,
        stop_check_every=10 if device.type == "cuda" else 1,
    )


def _teardown() -> bool:
    """Destroy the process group, bounded: False if it hung (pytorch issue #56297).

    The DDP model must already be gone (train returned and gc ran), or its reducer can
    block the destroy.
    """
    gc.collect()
    if not dist.is_initialized():
        return True
    worker = threading.Thread(target=dist.destroy_process_group, daemon=True)
    worker.start()
    worker.join(TEARDOWN_TIMEOUT_S)
    return not worker.is_alive()


def _record_failure(spec: RankSpec, rank: int, sink: EventSink | None) -> None:
    text = traceback.format_exc()
    Path(spec.run_dir).mkdir(parents=True, exist_ok=True)
    (Path(spec.run_dir) / f"rank{rank}.traceback").write_text(text)
    if sink is not None:
        try:
            message = text.strip().splitlines()[-1] if text.strip() else "error"
            data = {"message": message, "traceback": text}
            sink.publish(event_fields("error", spec.job_id, rank, data))
        except Exception:
            log.exception("could not publish the error event")


def run_rank(spec: RankSpec) -> None:
    """Run one rank of a job; raises SystemExit(1) after recording a failure."""
    stop_flag = StopFlag()
    signal.signal(signal.SIGTERM, stop_flag.set)  # cancel: finish the step, checkpoint, return
    torch.set_num_threads(spec.num_threads)
    rank = int(os.environ.get("RANK", "0"))
    sink: EventSink | None = None
    try:
        sink = _open_sink(spec)
        kind = kinds.get_kind(spec.kind)
        if kind is None:
            raise ValueError(f"unknown job kind {spec.kind!r}")
        config = kind.config_model.model_validate(spec.config)
        backend = "nccl" if spec.device_type == "cuda" else "gloo"
        dist.init_process_group(backend=backend, init_method="env://", timeout=COLLECTIVE_TIMEOUT)
        ctx = _make_context(spec, sink, stop_flag)
        kind.resolve_train()(ctx, config)
        del ctx
    except BaseException:
        _record_failure(spec, rank, sink)
        clean = _teardown()
        _close(sink)
        if not clean:
            os._exit(1)  # a hung destroy thread would also hang interpreter shutdown
        sys.exit(1)
    if not _teardown():
        _close(sink)
        os._exit(0)
    _close(sink)


def _close(sink: EventSink | None) -> None:
    if sink is not None:
        sink.close()
