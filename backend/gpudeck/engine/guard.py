"""The guard of a command job: `python -m gpudeck.engine.guard <run_dir>/command.json`.

A kind with a `command` (the `script` kind: the real torchrun) runs a program whose own
children GPUDeck does not start: torchrun's agent starts each worker rank in a session of its
own, so no single process group holds the job. The guard is the one process that can always
find them all:

- it is a child subreaper: a rank orphaned by its agent (agent SIGKILLed) is reparented here;
- it starts the command with PR_SET_PDEATHSIG (SIGKILL): the agent dies with the guard;
- SIGTERM is forwarded to the command (torchrun forwards it to its workers); SIGUSR1 means
  "kill everything now";
- it holds the read end of the worker's lifeline pipe: at EOF (the worker died, even by
  SIGKILL) it kills every descendant; its parent-death signal is SIGUSR1 too, never SIGKILL,
  which would leave the ranks behind;
- when the command exits, whatever of it is left is SIGKILLed and reaped before the guard
  exits, and the command's exit status is written to `<run_dir>/command.exit` (JSON);
- it bounds and measures the job's host memory (engine/host_memory.py): past the job's limit
  it kills the job, and `command.exit` says which rank held the most.

Standard library and core.linux only: it starts in a few tens of milliseconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from gpudeck.core.linux import become_subreaper, children, die_with_parent
from gpudeck.engine.host_memory import RankMemory, bound_process, watch

EXIT_FILE = "command.exit"
REAP_TIMEOUT_S = 30.0
MEMORY_INTERVAL_S = 0.2


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields start after the last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def descendants(pid: int) -> list[int]:
    """Every live process below `pid`, parents before children.

    Read down from `pid`, each process's own children lists: a few reads for a job's few
    processes. The stat of every process on the machine (the fallback, on a kernel that keeps
    no such lists) is a few ms at 200 processes and grows with the machine, at each of the
    memory watch's five looks a second, for every script job. A process the walk misses while
    it forks or exits is found by the next look, and kill_tree looks until no child is left."""
    found, queue = [], [pid]
    while queue:
        listed = children(queue.pop(0))
        if listed is None:
            return _descendants_from_stat(pid)
        found += listed
        queue += listed
    return found


def _descendants_from_stat(pid: int) -> list[int]:
    by_parent = _children_map()
    found, queue = [], list(by_parent.get(pid, []))
    while queue:
        child = queue.pop(0)
        found.append(child)
        queue.extend(by_parent.get(child, []))
    return found


def kill_tree() -> None:
    """SIGKILL every descendant of this process (and the group each leads), reap them all."""
    deadline = time.monotonic() + REAP_TIMEOUT_S
    while time.monotonic() < deadline:
        for pid in descendants(os.getpid()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return  # no child left: orphans of the command were reparented here and reaped
        time.sleep(0.02)


def _watch_lifeline(fd: int) -> None:
    def watch() -> None:
        with contextlib.suppress(OSError):
            while os.read(fd, 1):
                pass
        kill_tree()  # the worker is gone: nothing of the job may outlive it
        os._exit(137)

    threading.Thread(target=watch, name="gpudeck-guard-lifeline", daemon=True).start()


def _status(returncode: int) -> dict[str, Any]:
    if returncode < 0:
        return {"returncode": returncode, "signal": signal.Signals(-returncode).name}
    return {"returncode": returncode}


def kill_descendants() -> None:
    """SIGKILL, without reaping: the main thread's wait() must still see the command's end."""
    for pid in descendants(os.getpid()):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _watch_memory(memory: RankMemory, interval_s: float) -> threading.Event:
    """Look at the job's memory until the returned event is set; past the limit, kill it."""
    done = threading.Event()

    def run() -> None:
        def job_pids() -> list[int]:
            return descendants(os.getpid())

        watch(memory, job_pids, kill_descendants, done.wait, interval_s)

    threading.Thread(target=run, name="gpudeck-guard-memory", daemon=True).start()
    return done


def _preexec(limit_bytes: int | None, nprocs: int) -> None:
    die_with_parent()  # the agent dies with the guard, whatever kills it
    if limit_bytes is not None:
        bound_process(limit_bytes, nprocs)  # inherited by the agent's ranks


def run(spec: dict[str, Any], run_dir: Path) -> int:
    become_subreaper()
    lifeline = spec.get("lifeline_fd")
    if lifeline is not None:
        _watch_lifeline(int(lifeline))
    started: list[subprocess.Popen[bytes]] = []
    early: list[int] = []  # signals that came before the command started

    def forward(signum: int, _frame: object) -> None:
        early.append(signum)
        for child in started:
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signum)

    def kill_now(_signum: int, _frame: object) -> None:
        kill_tree()
        os._exit(137)

    # Before the command starts: a cancel that comes at once is forwarded, not fatal to us.
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGUSR1, kill_now)
    limit = spec.get("host_memory_bytes")
    nprocs = int(spec.get("nprocs", 1))
    memory = RankMemory(run_dir, int(limit) if limit is not None else None)
    with open(spec["output"], "ab") as out:
        child = subprocess.Popen(
            spec["argv"],
            env=spec["env"],
            cwd=spec["cwd"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=lambda: _preexec(memory.limit_bytes, nprocs),
        )
    started.append(child)
    for signum in early[:1]:
        child.send_signal(signum)
    watching = _watch_memory(memory, float(spec.get("memory_interval_s", MEMORY_INTERVAL_S)))
    returncode = child.wait()
    watching.set()
    kill_tree()
    status = _status(returncode)
    if memory.exceeded:
        status["memory_exceeded_by"] = memory.exceeded_by
    (run_dir / EXIT_FILE).write_text(json.dumps(status))
    return returncode if returncode >= 0 else 128 - returncode


def main() -> None:
    path = Path(sys.argv[1])
    spec = json.loads(path.read_text())
    sys.exit(run(spec, path.parent))


if __name__ == "__main__":
    main()
