"""Start a job's ranks: one process per device, torchrun's environment, one process group.

The worker keeps a *warm* forkserver: a process that has already imported torch,
torch.distributed, DDP, torch._dynamo and torch._inductor (and the job kinds' train modules),
and never initialises CUDA. A rank is then a fork of it, not a fresh interpreter that spends
seconds importing ~800 modules. If the forkserver has died, ranks start cold (multiprocessing
"spawn") and a new forkserver warms up in the background.

Each rank:
- joins the job's own process group (rank 0's pid), so one `killpg` reaches every rank;
- gets exactly torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR,
  MASTER_PORT, ...) and CUDA_VISIBLE_DEVICES narrowed to its device (CUDA_DEVICE_ORDER=PCI_BUS_ID);
- writes stdout/stderr to `<run_dir>/rank<r>.log`;
- holds the read end of a lifeline pipe whose only write end is in the worker: if the worker
  dies (even by SIGKILL), the pipe reaches EOF and the rank kills its whole group.

This module imports no torch at module level: the worker process stays light and CUDA-free.
"""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing as mp
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing import forkserver
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Literal

log = logging.getLogger(__name__)

# Imported once by the forkserver; forks inherit them. Never anything that initialises CUDA.
PRELOAD = (
    "torch",
    "torch.distributed",
    "torch.nn.parallel",
    "torch._dynamo",
    "torch._inductor",
    "gpudeck.trainer.rank",
    "gpudeck.trainer.launch",
    "gpudeck.trainer.forkserver_init",  # last: its own process group, kinds resolved
)
JOIN_GROUP_TIMEOUT_S = 30.0
WARM_TIMEOUT_S = 300.0
# How long a job waits for a warm-up already under way before it starts cold instead: a
# warm-up that hangs must delay a job by seconds, not by WARM_TIMEOUT_S.
WARM_WAIT_S = 30.0
DeviceType = Literal["cpu", "cuda"]


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS just handed out: chosen per job, never a constant."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def threads_per_rank(world_size: int, cpus: int | None = None) -> int:
    """Split this machine's cores across the ranks so gloo ranks do not oversubscribe them."""
    available = cpus or len(os.sched_getaffinity(0))
    return max(1, available // max(1, world_size))


def rank_environment(
    *,
    rank: int,
    world_size: int,
    master_addr: str,
    master_port: int,
    device_type: DeviceType,
    device_index: int | None,
    num_threads: int,
    run_id: str,
) -> dict[str, str]:
    """torchrun's variables for one rank on a single node, plus the device it may see."""
    env = {
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "GROUP_RANK": "0",
        "ROLE_RANK": str(rank),
        "ROLE_NAME": "default",
        "WORLD_SIZE": str(world_size),
        "LOCAL_WORLD_SIZE": str(world_size),
        "ROLE_WORLD_SIZE": str(world_size),
        "GROUP_WORLD_SIZE": "1",
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": str(master_port),
        "TORCHELASTIC_RUN_ID": run_id,
        "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": "0",
        "OMP_NUM_THREADS": str(num_threads),
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        # Simulated devices run on CPU: such a rank must not see any GPU at all.
        "CUDA_VISIBLE_DEVICES": str(device_index) if device_type == "cuda" else "",
    }
    return env


@dataclass(frozen=True)
class LaunchRequest:
    job_id: int
    run_dir: Path
    # RankSpec's fields (gpudeck.trainer.rank), less device_type and num_threads.
    spec: dict[str, Any]
    device_type: DeviceType
    # Per rank: the device's index (NVML = CUDA with PCI_BUS_ID order); simulated: their index.
    device_indices: Sequence[int]
    master_addr: str = "127.0.0.1"
    num_threads: int | None = None

    @property
    def world_size(self) -> int:
        return len(self.device_indices)


@dataclass
class RankGroup:
    """A started job: its rank processes, their process group and the worker's lifeline."""

    job_id: int
    processes: list[Any]
    pgid: int
    master_port: int
    warm: bool
    lifeline: Connection | None
    run_dir: Path
    exit_codes: dict[int, int] = field(default_factory=dict)

    def poll(self) -> dict[int, int]:
        """Ranks that have exited so far, with their exit codes (negative: killed by signal)."""
        for rank, proc in enumerate(self.processes):
            if rank not in self.exit_codes and proc.exitcode is not None:
                self.exit_codes[rank] = proc.exitcode
        return dict(self.exit_codes)

    def wait(self, timeout_s: float) -> dict[int, int]:
        alive = [p.sentinel for r, p in enumerate(self.processes) if r not in self.exit_codes]
        if alive:
            wait(alive, timeout=timeout_s)
        return self.poll()

    @property
    def done(self) -> bool:
        return len(self.poll()) == len(self.processes)

    def signal(self, sig: signal.Signals) -> None:
        """Signal the whole group, and each rank by pid (one may not have joined it yet)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)
        for rank, proc in enumerate(self.processes):
            if rank not in self.poll() and proc.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, sig)

    def request_stop(self) -> None:
        """SIGTERM: each rank finishes its step, rank 0 writes a final checkpoint, they exit."""
        self.signal(signal.SIGTERM)

    def stop(self, grace_s: float) -> dict[int, int]:
        """SIGTERM, up to `grace_s` to finish (rank 0 writes a final checkpoint), then SIGKILL."""
        if not self.done:
            self.request_stop()
        deadline = time.monotonic() + grace_s
        while not self.done and time.monotonic() < deadline:
            self.wait(min(0.2, max(0.0, deadline - time.monotonic())))
        return self.kill()

    def kill(self) -> dict[int, int]:
        """SIGKILL whatever is left of the group and reap it: no process of the job survives."""
        self.signal(signal.SIGKILL)
        for proc in self.processes:
            proc.join(timeout=30)
        # Anything that left the group's ranks' parentage but kept the group (a rank's child).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signal.SIGKILL)
        return self.poll()

    def close(self) -> None:
        if self.lifeline is not None:
            self.lifeline.close()
            self.lifeline = None


def group_alive(pgid: int) -> bool:
    """True while any process is in the group (for checks that nothing of a job survived)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --- inside a rank ------------------------------------------------------------------------


def _join_group(rank: int, pgid: int) -> None:
    if rank == 0:
        os.setpgid(0, 0)
        return
    deadline = time.monotonic() + JOIN_GROUP_TIMEOUT_S
    while True:
        try:
            os.setpgid(0, pgid)
            return
        except PermissionError:  # rank 0 has not made its group yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.001)


def _redirect_output(log_path: Path) -> None:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(line_buffering=True)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", force=True)


def _watch_lifeline(lifeline: Connection) -> None:
    def watch() -> None:
        with contextlib.suppress(EOFError, OSError):
            lifeline.recv_bytes()
        # The worker is gone (or hung up on us): take the whole job down with it.
        os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="gpudeck-lifeline", daemon=True).start()


def _rank_entry(
    rank: int,
    pgid: int,
    env: dict[str, str],
    spec: dict[str, Any],
    lifeline: Connection,
    log_path: str,
) -> None:
    _join_group(rank, pgid or os.getpid())
    _redirect_output(Path(log_path))
    os.environ.update(env)
    _watch_lifeline(lifeline)
    from gpudeck.trainer.rank import RankSpec, run_rank

    run_rank(RankSpec(**spec))


def _noop() -> None:
    pass


# --- the launcher ---------------------------------------------------------------------------


def _forkserver_alive() -> bool:
    """Whether multiprocessing's forkserver is running, without reaping it if it died."""
    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    if pid is None:
        return False
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:
        return False


class Launcher:
    """Owns the warm forkserver of one worker process and starts ranks from it."""

    def __init__(self, preload: Sequence[str] = PRELOAD) -> None:
        self._preload = list(dict.fromkeys(preload))
        self._warm_ctx = mp.get_context("forkserver")
        self._cold_ctx = mp.get_context("spawn")
        self._lock = threading.Lock()
        self._warming: threading.Thread | None = None
        self._warm = threading.Event()
        self._settled = threading.Event()  # the last warm-up attempt finished, well or not

    @property
    def warm(self) -> bool:
        return self._warm.is_set() and _forkserver_alive()

    def warm_up(self) -> None:
        """Start (or restart) the forkserver in the background; returns at once."""
        with self._lock:
            if self._warming is not None and self._warming.is_alive():
                return
            self._warm.clear()
            self._settled.clear()
            self._warming = threading.Thread(target=self._warm_up, name="gpudeck-warm", daemon=True)
            self._warming.start()

    def _warm_up(self) -> None:
        started = time.monotonic()
        try:
            self._warm_ctx.set_forkserver_preload(self._preload)
            proc = self._warm_ctx.Process(target=_noop)
            proc.start()  # blocks until the forkserver has imported PRELOAD
            proc.join()
        except Exception:
            log.exception("the warm launcher did not start; ranks will start cold")
            return
        else:
            self._warm.set()
            log.info("warm launcher ready in %.1f s", time.monotonic() - started)
        finally:
            self._settled.set()

    def wait_warm(self, timeout_s: float = WARM_TIMEOUT_S) -> bool:
        """Wait for the current warm-up attempt; True if the launcher is warm."""
        self._settled.wait(timeout_s)
        return self.warm

    def _context(self) -> tuple[Any, bool]:
        warming = self._warming
        if warming is not None and warming.is_alive():
            warming.join(WARM_WAIT_S)  # already importing: usually faster than a cold start
        if self._warm.is_set() and _forkserver_alive():
            return self._warm_ctx, True
        log.warning("warm launcher is not running: starting ranks cold and re-warming")
        self.warm_up()
        return self._cold_ctx, False

    def launch(self, request: LaunchRequest) -> RankGroup:
        ctx, warm = self._context()
        run_dir = Path(request.run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        port = free_port(request.master_addr)
        threads = request.num_threads or threads_per_rank(request.world_size)
        spec = {**request.spec, "device_type": request.device_type, "num_threads": threads}
        reader, writer = ctx.Pipe(duplex=False)
        group = RankGroup(request.job_id, [], 0, port, warm, writer, run_dir)
        try:
            for rank, index in enumerate(request.device_indices):
                env = rank_environment(
                    rank=rank,
                    world_size=request.world_size,
                    master_addr=request.master_addr,
                    master_port=port,
                    device_type=request.device_type,
                    device_index=index,
                    num_threads=threads,
                    run_id=f"gpudeck-{request.job_id}",
                )
                proc = ctx.Process(
                    target=_rank_entry,
                    args=(rank, group.pgid, env, spec, reader, str(run_dir / f"rank{rank}.log")),
                    name=f"gpudeck-job{request.job_id}-rank{rank}",
                )
                proc.start()
                group.processes.append(proc)
                group.pgid = group.pgid or int(proc.pid)
        except BaseException:
            group.kill()
            group.close()
            raise
        finally:
            reader.close()
        _write_launch_record(group)
        return group


def _write_launch_record(group: RankGroup) -> None:
    """`<run_dir>/launch.json`: who the ranks are, for operators and for tests."""
    record = {
        "job_id": group.job_id,
        "pgid": group.pgid,
        "pids": [p.pid for p in group.processes],
        "master_port": group.master_port,
        "warm": group.warm,
        "launched_at": time.time(),
    }
    (group.run_dir / "launch.json").write_text(json.dumps(record))
