"""The entry point of one rank process: `run_rank(place)`.

The launcher starts one process per device with torchrun's environment (RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, CUDA_VISIBLE_DEVICES narrowed to the
rank's device) and calls run_rank in each with its place in the launch contract
(engine.contract: the job's JobLaunch and the rank's local index). It joins the process group,
validates the config with the kind's model, runs `kind.resolve_train()(ctx, config)` and tears
down.

Rendezvous: rank 0 hosts the TCPStore on MASTER_ADDR:MASTER_PORT, as with torchrun's env://.
The launcher may hand rank 0 that port's socket already listening (`store_socket`): a peer that
connects before rank 0 is up then waits in the socket's backlog. Without it, a peer that comes
first is refused, and the TCPStore client backs off for 0.25-0.75 s before it tries again
(a third of warm job starts took 0.55 s instead of 0.12 s: see bench/job_start.py).
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import socket
import sys
import threading
import time
import traceback
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from gpudeck.engine import events, kinds
from gpudeck.engine.context import EventSink, JsonlSink, RedisSink, StopFlag, TrainContext
from gpudeck.engine.contract import JobLaunch, RankPlace
from gpudeck.engine.memory_cap import cap_allocator

log = logging.getLogger(__name__)
COLLECTIVE_TIMEOUT = timedelta(minutes=10)  # a peer that died is noticed after this at worst
TEARDOWN_TIMEOUT_S = 30.0


def _open_sink(place: RankPlace) -> EventSink:
    launch, target = place.launch, place.launch.events
    if target.redis_url:
        return RedisSink(target.redis_url, target.stream or f"gpudeck:job:{launch.job_id}:events")
    name = f"events.{place.rank}.jsonl" if target.per_rank_file else "events.jsonl"
    return JsonlSink(Path(launch.run_dir) / name)


def _device(spec: JobLaunch) -> torch.device:
    if spec.device_type == "cuda":
        torch.cuda.set_device(0)  # CUDA_VISIBLE_DEVICES leaves this rank exactly one device
        _cap_memory(spec)
        return torch.device("cuda", 0)
    return torch.device("cpu")  # simulated devices: the sampler's watchdog is the only guard


def _cap_memory(spec: JobLaunch) -> None:
    """A sharing job's rank holds its allocator to the job's reservation before it allocates,
    so running over it is this rank's OutOfMemoryError (a traceback the job keeps) rather than
    the sampler's SIGKILL (docs/sharing.md)."""
    reserved = spec.reserved_bytes_per_device
    if reserved is None:
        return
    total_bytes = torch.cuda.mem_get_info()[1]
    context = spec.context_reserve_bytes or 0
    fraction = cap_allocator(reserved, total_bytes, context_reserve_bytes=context)
    log.info(
        "job %d: allocator capped at %.4f of the device (%d bytes reserved, %d for the context)",
        spec.job_id,
        fraction,
        reserved,
        context,
    )


def _make_context(place: RankPlace, sink: EventSink, stop_flag: StopFlag) -> TrainContext:
    spec = place.launch
    device = _device(spec)
    return TrainContext(
        rank=place.rank,
        world_size=place.world_size,
        local_rank=place.local_rank,
        device=device,
        job_id=spec.job_id,
        kind=spec.kind,
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


def _record_failure(spec: JobLaunch, rank: int, sink: EventSink | None) -> None:
    text = traceback.format_exc()
    # Into the rank's log too (stderr is that file): `gpudeck logs` shows what killed the rank.
    sys.stderr.write(text)
    sys.stderr.flush()
    Path(spec.run_dir).mkdir(parents=True, exist_ok=True)
    (Path(spec.run_dir) / f"rank{rank}.traceback").write_text(text)
    if sink is not None:
        try:
            # The exception's own line (a multi-line message's first line), not the traceback's
            # last line, which may be the middle of a long message.
            exc = sys.exc_info()[1]
            only = traceback.format_exception_only(type(exc), exc) if exc is not None else []
            message = "".join(only).strip().splitlines()[0] if only else "error"
            data = {"message": message, "traceback": text}
            sink.publish(events.encode("error", spec.job_id, rank, data))
        except Exception:
            log.exception("could not publish the error event")


def _join_process_group(place: RankPlace, backend: str, store_socket: socket.socket | None) -> None:
    """init_process_group over a TCPStore that rank 0 hosts (on `store_socket` if given)."""
    rank, world_size = place.rank, place.world_size
    listen_fd = store_socket.detach() if store_socket is not None else None  # the store owns it
    store = dist.TCPStore(
        place.launch.master_addr,
        place.launch.master_port,
        world_size,
        is_master=rank == 0,
        timeout=COLLECTIVE_TIMEOUT,
        master_listen_fd=listen_fd if rank == 0 else None,
    )
    dist.init_process_group(
        backend=backend, store=store, rank=rank, world_size=world_size, timeout=COLLECTIVE_TIMEOUT
    )


def run_rank(place: RankPlace, store_socket: socket.socket | None = None) -> None:
    """Run one rank of a job; raises SystemExit(1) after recording a failure.

    The process already has `place.environment()` (torchrun's variables, its device).
    `store_socket`: for rank 0, the rendezvous port already listening (see the module doc)."""
    spec = place.launch
    stop_flag = StopFlag()
    signal.signal(signal.SIGTERM, stop_flag.set)  # cancel: finish the step, checkpoint, return
    # Slurm's way of saying the same (the batch shell passes it on: the time limit's warning,
    # or GPUDeck's cancel): SIGTERM there comes from Slurm's own kill, seconds before SIGKILL.
    signal.signal(signal.SIGUSR1, stop_flag.set)
    torch.set_num_threads(spec.num_threads or 1)
    rank = place.rank
    sink: EventSink | None = None
    try:
        sink = _open_sink(place)
        kind = kinds.get_kind(spec.kind)
        if kind is None:
            refused = kinds.refused_kinds().get(spec.kind)
            raise ValueError(refused.reason if refused else f"unknown job kind {spec.kind!r}")
        config = kind.config_model.model_validate(spec.config)
        backend = "nccl" if spec.device_type == "cuda" else "gloo"
        joining = time.monotonic()
        _join_process_group(place, backend, store_socket)
        log.info("rank %d joined the process group in %.3f s", rank, time.monotonic() - joining)
        ctx = _make_context(place, sink, stop_flag)
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
