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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing import forkserver
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from gpudeck.engine.command import CommandGroup, launch_command
from gpudeck.engine.contract import CONTRACT_FILE, JobLaunch
from gpudeck.engine.forkserver_process import ForkServerProcess
from gpudeck.engine.kinds import get_kind
from gpudeck.engine.stopping import JobProcesses

log = logging.getLogger(__name__)

# Imported once by the forkserver; forks inherit them. Never anything that initialises CUDA.
PRELOAD = (
    "torch",
    "torch.distributed",
    "torch.nn.parallel",
    "torch._dynamo",
    "torch._inductor",
    "gpudeck.engine.rank",
    "gpudeck.engine.launch",
    "gpudeck.engine.forkserver_init",  # last: its own process group, kinds resolved
)
JOIN_GROUP_TIMEOUT_S = 30.0
WARM_TIMEOUT_S = 300.0
# How long a job waits for a warm-up already under way before it starts cold instead: a
# warm-up that hangs must delay a job by seconds, not by WARM_TIMEOUT_S.
WARM_WAIT_S = 30.0
FORKSERVER_POLL_S = 1.0
# The worker's pid, for the forkserver to check it was not orphaned before arming PDEATHSIG.
FORKSERVER_PARENT_ENV = "GPUDECK_FORKSERVER_PARENT"


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS just handed out: chosen per job, never a constant."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def threads_per_rank(world_size: int, cpus: int | None = None, node_devices: int = 0) -> int:
    """Each rank's share of this machine's cores: one device's share when the node's device
    count is known (the jobs on its other devices get theirs: a 1-rank job on one of 8
    simulated devices taking every core as threads made each of 8 such jobs spin against the
    others), else the cores split across the job's own ranks, so gloo ranks never
    oversubscribe them."""
    available = cpus or len(os.sched_getaffinity(0))
    return max(1, available // max(1, world_size, node_devices))


@dataclass
class RankGroup(JobProcesses):
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

    @property
    def local_ranks(self) -> int:
        return len(self.processes)

    def signal(self, sig: signal.Signals) -> None:
        """Signal the whole group, and each rank by pid (one may not have joined it yet)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)
        for rank, proc in enumerate(self.processes):
            if rank not in self.poll() and proc.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, sig)

    def events(self) -> list[tuple[str, dict[str, Any]]]:
        """Ranks publish their own events: nothing to add (see CommandGroup.events)."""
        return []

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
    local_rank: int,
    pgid: int,
    launch_json: str,
    lifeline: Connection,
    store_socket: socket.socket | None = None,
) -> None:
    launch = JobLaunch.from_json(launch_json)
    place = launch.rank(local_rank)
    _join_group(local_rank, pgid or os.getpid())
    _redirect_output(Path(launch.run_dir) / f"rank{place.rank}.log")
    os.environ.update(place.environment())
    _watch_lifeline(lifeline)
    from gpudeck.engine.rank import run_rank

    run_rank(place, store_socket)


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
            busy = self._warming is not None and self._warming.is_alive()
            if busy and (not self._settled.is_set() or self.warm):
                return  # under way, or warm: its thread lives while the forkserver does
            self._warm.clear()
            self._settled.clear()
            self._warming = threading.Thread(target=self._warm_up, name="gpudeck-warm", daemon=True)
            self._warming.start()

    def _warm_up(self) -> None:
        started = time.monotonic()
        try:
            self._warm_ctx.set_forkserver_preload(self._preload)
            os.environ[FORKSERVER_PARENT_ENV] = str(os.getpid())
            proc = ForkServerProcess(target=_noop)
            proc.start()  # blocks until the forkserver has imported PRELOAD
            proc.join()
        except Exception as exc:
            # The forkserver prints its own import error; here the usual cause is a shutdown
            # that stopped it mid-import, which needs no traceback.
            log.warning("the warm launcher did not start (%r); ranks will start cold", exc)
            log.debug("warm launcher failure", exc_info=True)
            return
        else:
            self._warm.set()
            log.info("warm launcher ready in %.1f s", time.monotonic() - started)
        finally:
            self._settled.set()
        # The forkserver dies with the thread that started it (PR_SET_PDEATHSIG, set in
        # forkserver_init, watches the parent *thread*), so this thread lives as long as it.
        while _forkserver_alive():
            time.sleep(FORKSERVER_POLL_S)

    def wait_warm(self, timeout_s: float = WARM_TIMEOUT_S) -> bool:
        """Wait for the current warm-up attempt; True if the launcher is warm."""
        self._settled.wait(timeout_s)
        return self.warm

    def _process_type(self) -> tuple[Callable[..., BaseProcess], bool]:
        """The process type ranks start as, and whether that start is warm."""
        if self._warming is not None and not self._settled.is_set():
            self._settled.wait(WARM_WAIT_S)  # already importing: usually faster than cold
        if self._warm.is_set() and _forkserver_alive():
            return ForkServerProcess, True
        log.warning("warm launcher is not running: starting ranks cold and re-warming")
        self.warm_up()
        return self._cold_ctx.Process, False

    def launch(self, request: JobLaunch) -> RankGroup | CommandGroup:
        kind = get_kind(request.kind)
        build = kind.resolve_command() if kind is not None else None
        if build is not None:
            # The kind runs its own program (torchrun): no rank process of ours, no forkserver.
            port = request.master_port or free_port(request.master_addr)
            return launch_command(request, build, port)
        return self.launch_ranks(request)

    def launch_ranks(self, request: JobLaunch) -> RankGroup:
        if request.node_rank > 0 and not request.master_port:
            raise ValueError(f"job {request.job_id}: node rank {request.node_rank} has no port")
        process_type, warm = self._process_type()
        run_dir = Path(request.run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        # Listening before any rank starts: a rank that connects before rank 0 hosts the
        # store waits in the backlog instead of being refused (and backing off, see rank.py).
        # Only the node of rank 0 hosts it: the others join the port it published.
        store_socket = None
        port = request.master_port
        if request.node_rank == 0:
            store_socket = socket.create_server((request.master_addr, port), backlog=128)
            port = int(store_socket.getsockname()[1])
        threads = request.num_threads or threads_per_rank(request.local_world_size)
        launch = request.replace(master_port=port, num_threads=threads)
        launch_json = launch.to_json()
        (run_dir / CONTRACT_FILE).write_text(launch_json)
        reader, writer = mp.Pipe(duplex=False)
        group = RankGroup(launch.job_id, [], 0, port, warm, writer, run_dir)
        try:
            for local_rank in range(launch.local_world_size):
                store = store_socket if local_rank == 0 else None  # global rank 0 only
                args = (local_rank, group.pgid, launch_json, reader, store)
                proc = process_type(
                    target=_rank_entry,
                    args=args,
                    name=f"gpudeck-job{launch.job_id}-rank{launch.rank(local_rank).rank}",
                )
                proc.start()
                group.processes.append(proc)
                if proc.pid is None:  # start() returns only once the child exists
                    raise RuntimeError(f"job {launch.job_id}: a rank started without a pid")
                group.pgid = group.pgid or proc.pid
        except BaseException:
            group.kill()
            group.close()
            raise
        finally:
            reader.close()
            if store_socket is not None:
                store_socket.close()  # rank 0 holds its own copy
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
