"""The guard finds a job's processes by reading down from itself (each process's children lists
in /proc), and finds the same ones the stat of every process on the machine names."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from gpudeck.core.linux import children
from gpudeck.engine import guard

# An agent with two ranks, one started from another thread (a child is listed under the
# thread that forked it), each rank with threads of its own.
RANK = "import threading, time; [threading.Thread(target=time.sleep, args=(30,), daemon=True).start() for _ in range(4)]; time.sleep(30)"  # noqa: E501
AGENT = f"""
import subprocess, sys, threading, time
ranks = [subprocess.Popen([sys.executable, "-c", {RANK!r}])]
threading.Thread(target=lambda: ranks.append(subprocess.Popen([sys.executable, "-c", {RANK!r}]))).start()
time.sleep(30)
"""  # noqa: E501


@pytest.fixture
def tree() -> Iterator[subprocess.Popen[bytes]]:
    agent = subprocess.Popen([sys.executable, "-c", AGENT])
    yield agent
    for pid in [*reversed(guard.descendants(agent.pid)), agent.pid]:
        os.kill(pid, 9)
    agent.wait()


def test_descendants_read_down_match_the_whole_process_table(
    tree: subprocess.Popen[bytes],
) -> None:
    deadline = time.monotonic() + 30
    while len(guard._descendants_from_stat(tree.pid)) < 2:  # the agent's two ranks
        assert time.monotonic() < deadline, "the ranks never started"
        time.sleep(0.05)
    found = guard.descendants(tree.pid)
    assert sorted(found) == sorted(guard._descendants_from_stat(tree.pid))
    assert set(children(tree.pid) or []) == set(found)  # one of them forked by another thread
    assert tree.pid in guard.descendants(os.getpid())


def test_a_gone_process_has_no_children() -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert children(gone.pid) == []
