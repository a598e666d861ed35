"""Launch a kind that runs a program of its own (`JobKind.command`), e.g. the real torchrun.

The kind turns the launch contract into a `CommandSpec` (an argument list, never a shell
string, and its environment); the launcher starts it under the guard (engine/guard.py) and
hands the worker a `CommandGroup`, which answers the same calls as the rank group of built-in
kinds (poll, wait, request_stop, stop, kill, close), plus `events()`: what the job's files say
(rank logs, metrics lines, checkpoints; engine/command_output.py).

No process of the job outlives it, whoever dies first:
- cancel: SIGTERM to the guard, forwarded to the command; after the grace, `kill()`;
- `kill()`: SIGUSR1 to the guard (it SIGKILLs every descendant and reaps them), then SIGKILL to
  the guard's group, then a sweep of every process carrying the job's token in its
  environment (a rank whose agent and guard were both SIGKILLed is found that way);
- the worker dies: the guard's lifeline pipe reaches EOF and it kills everything;
- the agent dies: its ranks are reparented to the guard (a subreaper), which kills them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpudeck.core.linux import die_with_parent
from gpudeck.engine.command_output import CommandFiles, CommandOutput, Event
from gpudeck.engine.contract import CONTRACT_FILE, JobLaunch
from gpudeck.engine.guard import EXIT_FILE
from gpudeck.engine.host_memory import exceeded_text, read_ranks
from gpudeck.engine.stopping import JobProcesses

TOKEN_ENV = "GPUDECK_JOB_TOKEN"
COMMAND_FILE = "command.json"
GUARD_KILL_WAIT_S = 10.0
SWEEP_TIMEOUT_S = 10.0
# How a rank says a host allocation failed (Python; torch's CPU allocator; C++). Not torch's
# OutOfMemoryError (device memory): the word boundary keeps "OutOfMemoryError" out.
_OUT_OF_MEMORY = re.compile(r"\bMemoryError\b|can't allocate memory|std::bad_alloc")


@dataclass(frozen=True)
class CommandSpec:
    """What a command kind runs for one job on one node."""

    argv: tuple[str, ...]
    env: Mapping[str, str]  # the whole environment: nothing of the worker's leaks in
    cwd: str
    files: CommandFiles
    nprocs: int  # ranks on this node
    host_memory_bytes: int | None = None  # the job's host memory limit on this node


def job_processes(token: str) -> list[int]:
    """Processes whose environment carries the job's token (same user: /proc is readable)."""
    needle = f"{TOKEN_ENV}={token}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def sweep(token: str) -> None:
    """SIGKILL every process of the job that is still there, until none is."""
    deadline = time.monotonic() + SWEEP_TIMEOUT_S
    while (pids := job_processes(token)) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


@dataclass
class CommandGroup(JobProcesses):
    job_id: int
    processes: list[subprocess.Popen[bytes]]  # the guard, alone
    pgid: int
    master_port: int
    token: str
    output: CommandOutput
    lifeline: int | None
    run_dir: Path
    warm: bool = False
    local_ranks: int = 1  # the command's own ranks on this node (their logs are rank<r>.log)
    host_memory_bytes: int | None = None
    exit_codes: dict[int, int] = field(default_factory=dict)
    memory_exceeded: str | None = None  # why the job failed, when it was for memory

    @property
    def guard(self) -> subprocess.Popen[bytes]:
        return self.processes[0]

    def poll(self) -> dict[int, int]:
        """{rank: code} once the command exited: the failing rank torchrun names (the guard's
        status otherwise, as rank 0); negative codes are signals."""
        if not self.exit_codes and self.guard.poll() is not None:
            status = self._command_status()
            code = int(status["returncode"])
            rank = 0
            self.output.flush_logs()  # every rank's last lines, before the job is ended
            if code != 0:
                rank = self._record_failure(status)
            self.exit_codes[rank] = code
        return dict(self.exit_codes)

    def _command_status(self) -> dict[str, Any]:
        try:
            status = json.loads((self.run_dir / EXIT_FILE).read_text())
            int(status["returncode"])
            return dict(status)
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return {"returncode": self.guard.returncode}  # the guard itself was killed

    def _record_failure(self, status: dict[str, Any]) -> int:
        """Which rank failed; its traceback to `rank<r>.traceback`; a memory verdict, if any:
        the guard killed the job past its limit, or a rank's allocation failed under its share."""
        failure = self.output.failure()
        rank, text = failure if failure is not None else (0, None)
        limit = self.host_memory_bytes
        if limit is not None and "memory_exceeded_by" in status:
            by = status["memory_exceeded_by"]
            rank = int(by) if by is not None else rank
            self.memory_exceeded = exceeded_text(limit, by) + (
                ": the job's processes together held more, and GPUDeck stopped it"
            )
            text = self.memory_exceeded + (f"\n{text}" if text else "")
        elif limit is not None and text is not None and _OUT_OF_MEMORY.search(text):
            self.memory_exceeded = exceeded_text(limit, rank) + (
                f": an allocation failed past its share ({self.local_ranks} ranks)"
            )
            text = f"{self.memory_exceeded}\n{text}"
        if text is not None:
            (self.run_dir / f"rank{rank}.traceback").write_text(text)
        return rank

    def rank_memory(self) -> dict[str, Any] | None:
        """The ranks' peak host memory and the limit, in schemas.jobs.RankMemory's shape."""
        record = read_ranks(self.run_dir)
        if record is None:
            return None
        ranks = record.get("ranks") or {}
        return {
            "host_limit_bytes": record.get("limit_bytes"),
            "exceeded": self.memory_exceeded is not None,
            "ranks": [
                {"rank": int(rank), "host_peak_rss_bytes": int(r["peak_rss_bytes"])}
                for rank, r in sorted(ranks.items(), key=lambda item: int(item[0]))
            ],
        }

    def rank_pids(self) -> dict[int, int]:
        """{pid: rank} of the command's ranks the guard has seen so far."""
        record = read_ranks(self.run_dir) or {}
        ranks = record.get("ranks") or {}
        return {int(r["pid"]): int(rank) for rank, r in ranks.items()}

    def wait(self, timeout_s: float) -> dict[int, int]:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.guard.wait(timeout_s)
        return self.poll()

    @property
    def done(self) -> bool:
        return bool(self.poll())

    def events(self) -> list[Event]:
        return self.output.collect()

    def signal(self, sig: signal.Signals) -> None:
        if self.guard.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.guard.pid, sig)

    def kill(self) -> dict[int, int]:
        """Nothing of the job survives this call."""
        self.signal(signal.SIGUSR1)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.guard.wait(GUARD_KILL_WAIT_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signal.SIGKILL)
        self.guard.wait()
        sweep(self.token)
        return self.poll()

    def close(self) -> None:
        if self.lifeline is not None:
            os.close(self.lifeline)
            self.lifeline = None


def _guard_environment() -> dict[str, str]:
    """The worker's environment with gpudeck importable (the guard runs `-m gpudeck...`)."""
    package_root = str(Path(__file__).resolve().parents[2])
    paths = [package_root, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}


def launch_command(
    request: JobLaunch, build: Callable[[JobLaunch], CommandSpec], port: int
) -> CommandGroup:
    run_dir = Path(request.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    launch = request.replace(master_port=port)
    (run_dir / CONTRACT_FILE).write_text(launch.to_json())
    spec = build(launch)
    token = secrets.token_hex(16)
    reader, writer = os.pipe()
    record: dict[str, Any] = {
        "argv": list(spec.argv),
        "env": {**spec.env, TOKEN_ENV: token},
        "cwd": spec.cwd,
        "output": str(spec.files.output_file),
        "lifeline_fd": reader,
        "host_memory_bytes": spec.host_memory_bytes,
        "nprocs": spec.nprocs,
    }
    command_file = run_dir / COMMAND_FILE
    # Written private: the environment may hold values the user passed in.
    fd = os.open(command_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(record, fh)
    try:
        guard_log = (run_dir / "guard.log").open("ab")
        guard = subprocess.Popen(
            [sys.executable, "-m", "gpudeck.engine.guard", str(command_file)],
            env=_guard_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=guard_log,
            pass_fds=(reader,),
            start_new_session=True,
            # SIGUSR1, not SIGKILL: the guard must live long enough to kill the job's tree.
            preexec_fn=lambda: die_with_parent(signal.SIGUSR1),
        )
    finally:
        os.close(reader)
        guard_log.close()
    group = CommandGroup(
        launch.job_id, [guard], guard.pid, port, token, CommandOutput(spec.files), writer, run_dir
    )
    group.local_ranks = spec.nprocs
    group.host_memory_bytes = spec.host_memory_bytes
    (run_dir / "launch.json").write_text(
        json.dumps(
            {
                "job_id": launch.job_id,
                "pgid": guard.pid,
                "pids": [guard.pid],
                "master_port": port,
                "warm": False,
                "command": list(spec.argv),
                "launched_at": time.time(),
            }
        )
    )
    return group
