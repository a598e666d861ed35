"""Section 8's runs: SAE members started as the worker starts a sharing job's rank (the launch
contract with its reservation, so engine/rank.py caps the allocator), alone or several at once on
device 0, while a thread reads the device's memory in use through NVML."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpudeck.engine.contract import DeviceType, JobLaunch
from gpudeck.engine.launch import free_port


@dataclass(frozen=True)
class MemberRun:
    """One member's run: how it ended and what it measured."""

    exit_code: int
    out_of_memory: bool  # its rank's traceback is an allocator refusal
    wall_s: float  # its rank, start to end (a run alone: its process, as a packed run is timed)
    activations_per_s: float | None  # the trainer's own figure over its last metrics interval
    max_reserved_bytes: int | None  # torch.cuda.max_memory_reserved in it (None on CPU)


def member_launch(
    run_dir: Path, data_dir: Path, job_id: int, config: dict[str, Any], device: DeviceType,
    reserved_bytes: int | None, context_bytes: int | None,
) -> JobLaunch:  # fmt: skip
    return JobLaunch(
        job_id=job_id,
        kind="sae",
        config=config,
        run_dir=str(run_dir),
        data_dir=str(data_dir),
        checkpoint_dir=str(run_dir / "ckpt"),
        device_type=device,
        device_indices=(0,),  # every member on the one device
        master_port=free_port(),
        num_threads=1,
        reserved_bytes_per_device=reserved_bytes,
        context_reserve_bytes=context_bytes,
    )


def _member_main(launch_json: str, out: str) -> None:
    """A spawned member: the rank as the worker runs it, then its allocator's peak."""
    import torch  # the members' own, after spawn

    from gpudeck.engine.rank import run_rank

    place = JobLaunch.from_json(launch_json).rank(0)
    os.environ.update(place.environment())
    code, started = 0, time.monotonic()
    try:
        run_rank(place)
    except SystemExit as exc:  # a rank that raised records its traceback, then exits 1
        code = int(exc.code or 0)
    cuda = place.launch.device_type == "cuda"
    reserved = torch.cuda.max_memory_reserved() if cuda else None
    Path(out).write_text(
        json.dumps({"code": code, "s": time.monotonic() - started, "reserved": reserved})
    )


def run_members(launches: Sequence[JobLaunch]) -> tuple[float, list[MemberRun]]:
    """Start every launch at once; (the wall-clock seconds until the last ends, each run)."""
    ctx = mp.get_context("spawn")
    outs = [Path(launch.run_dir) / "member.json" for launch in launches]
    procs = [
        ctx.Process(target=_member_main, args=(launch.to_json(), str(out)))
        for launch, out in zip(launches, outs, strict=True)
    ]
    started = time.monotonic()
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    wall_s = time.monotonic() - started
    runs = [
        _read(launch, out, proc.exitcode or 0)
        for launch, out, proc in zip(launches, outs, procs, strict=True)
    ]
    return wall_s, runs


def _read(launch: JobLaunch, out: Path, exitcode: int) -> MemberRun:
    run_dir = Path(launch.run_dir)
    found: dict[str, Any] = {"code": exitcode or -1, "s": 0.0}
    if out.exists():
        found = json.loads(out.read_text())
    traceback = run_dir / "rank0.traceback"
    oom = traceback.exists() and "OutOfMemoryError" in traceback.read_text()
    return MemberRun(found["code"], oom, found["s"], _last_rate(run_dir), found.get("reserved"))


def _last_rate(run_dir: Path) -> float | None:
    events = run_dir / "events.jsonl"
    if not events.exists():
        return None
    rates = [
        json.loads(e["data"])["metrics"].get("activations_per_s")
        for e in map(json.loads, events.read_text().splitlines())
        if e["type"] == "metrics"
    ]
    return float(rates[-1]) if rates and rates[-1] is not None else None


@contextmanager
def device_peak(enabled: bool, every_s: float = 0.01) -> Iterator[dict[str, int]]:
    """NVML's memory in use on device 0 before (`baseline`) and at its highest (`peak`) while
    the block runs; nothing on a dry run. The parent never touches CUDA, so what NVML counts
    beyond the baseline is the members' own."""
    found: dict[str, int] = {}
    if not enabled:
        yield found
        return
    import pynvml

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)

    def used() -> int:
        return int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)

    found["baseline"] = found["peak"] = used()
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(every_s):
            found["peak"] = max(found["peak"], used())

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        stop.set()
        thread.join()
        pynvml.nvmlShutdown()
