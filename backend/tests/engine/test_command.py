"""The command launcher and its guard with real processes (no torch: an "agent" that starts
two "ranks" in sessions of their own, as torchrun does). Whoever dies first, no process of
the job survives."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from gpudeck.engine.command import CommandGroup, CommandSpec, job_processes, launch_command
from gpudeck.engine.command_output import CommandFiles
from gpudeck.engine.contract import JobLaunch

AGENT = """
import os, subprocess, sys, time, signal
from pathlib import Path
ranks = [subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(1)"],
                          start_new_session=True) for _ in range(2)]
Path(sys.argv[1]).write_text(" ".join(str(r.pid) for r in ranks))
if sys.argv[2] == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:
    time.sleep(1)
"""


def launch(tmp_path: Path, mode: str = "plain") -> tuple[CommandGroup, list[int]]:
    run_dir = tmp_path / "run"
    pids_file = tmp_path / "ranks.txt"

    def build(job: JobLaunch) -> CommandSpec:
        files = CommandFiles(
            run_dir=run_dir,
            log_dir=run_dir / "torchrun",
            metrics_file=run_dir / "metrics.jsonl",
            error_file=run_dir / "error.json",
            checkpoint_dir=tmp_path / "ck",
            output_file=run_dir / "agent.log",
        )
        argv = (sys.executable, "-c", AGENT, str(pids_file), mode)
        return CommandSpec(argv, {"PATH": os.environ["PATH"]}, str(tmp_path), files, 2)

    request = JobLaunch(
        1, "fake", {}, str(run_dir), str(tmp_path), str(tmp_path / "ck"), "cpu", (0, 1)
    )
    group = launch_command(request, build, port=12345)
    deadline = time.monotonic() + 30
    while not pids_file.exists() or len(pids_file.read_text().split()) < 2:
        assert time.monotonic() < deadline, (run_dir / "agent.log").read_text()
        time.sleep(0.02)
    return group, [int(p) for p in pids_file.read_text().split()]


def agent_of(group: CommandGroup) -> psutil.Process:
    (agent,) = psutil.Process(group.guard.pid).children()
    return agent


def gone(pids: list[int], timeout_s: float = 10) -> bool:
    _, alive = psutil.wait_procs(
        [psutil.Process(p) for p in pids if psutil.pid_exists(p)], timeout_s
    )
    return not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]


@pytest.fixture
def cleanup() -> list[CommandGroup]:
    groups: list[CommandGroup] = []
    yield groups
    for group in groups:
        group.kill()
        group.close()


def test_ranks_carry_the_token_and_kill_leaves_nothing(tmp_path: Path, cleanup: list) -> None:
    group, ranks = launch(tmp_path)
    cleanup.append(group)
    found = set(job_processes(group.token))
    assert set(ranks) | {agent_of(group).pid} <= found
    command = json.loads((tmp_path / "run" / "command.json").read_text())
    assert oct((tmp_path / "run" / "command.json").stat().st_mode & 0o777) == "0o600"
    assert (
        command["env"]["PATH"] == os.environ["PATH"]
        and "GPUDECK_DATABASE_URL" not in command["env"]
    )
    group.kill()
    assert gone(ranks) and not job_processes(group.token)


def test_sigkill_of_the_agent_kills_its_orphaned_ranks(tmp_path: Path, cleanup: list) -> None:
    group, ranks = launch(tmp_path)
    cleanup.append(group)
    agent_of(group).send_signal(signal.SIGKILL)
    assert gone(ranks)
    assert group.wait(10) == {0: -9}  # the command's status, not the guard's
    assert not job_processes(group.token)


def test_sigkill_of_the_guard_then_kill_sweeps_by_token(tmp_path: Path, cleanup: list) -> None:
    group, ranks = launch(tmp_path)
    cleanup.append(group)
    agent = agent_of(group).pid
    group.guard.send_signal(signal.SIGKILL)
    assert gone([agent])  # PR_SET_PDEATHSIG
    assert all(psutil.pid_exists(p) for p in ranks)  # in sessions of their own, orphaned
    group.kill()
    assert gone(ranks) and not job_processes(group.token)


def test_closing_the_lifeline_kills_everything(tmp_path: Path, cleanup: list) -> None:
    group, ranks = launch(tmp_path)
    cleanup.append(group)
    agent = agent_of(group).pid
    group.close()  # what the worker's death does to the pipe
    assert gone([agent, *ranks, group.guard.pid])


def test_stop_forwards_sigterm_then_kills_after_the_grace(tmp_path: Path, cleanup: list) -> None:
    group, ranks = launch(tmp_path, mode="ignore")
    cleanup.append(group)
    started = time.monotonic()
    group.stop(grace_s=1.0)
    assert time.monotonic() - started >= 1.0
    assert gone(ranks) and not job_processes(group.token)


PARENT = """
import sys, time
sys.path.insert(0, {tests!r})
from pathlib import Path
from test_command import launch
group, ranks = launch(Path({tmp!r}))
print(group.guard.pid, group.token, *ranks, flush=True)
time.sleep(600)
"""


def test_sigkill_of_the_launching_process_leaves_nothing(tmp_path: Path) -> None:
    """The worker dies by SIGKILL: its parent-death signal and the lifeline reach the guard,
    which kills the agent and the ranks it had started in sessions of their own."""
    code = PARENT.format(tests=str(Path(__file__).parent), tmp=str(tmp_path))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env)
    assert parent.stdout is not None
    guard, token, *ranks = parent.stdout.readline().split()
    assert len(ranks) == 2 and set(map(int, ranks)) <= set(job_processes(token.decode()))
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    assert gone([int(guard), *map(int, ranks)])
    assert not job_processes(token.decode())
