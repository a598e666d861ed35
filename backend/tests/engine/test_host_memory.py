"""The guard's look at a command job's memory: each rank's peak, its PID, the limit's verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gpudeck.engine.host_memory import (
    RANKS_FILE,
    ProcessMemory,
    RankMemory,
    bound_process,
    read_processes,
)

MIB = 1024**2


def test_a_rank_peak_counts_its_children_and_the_limit_names_the_rank_holding_most(
    tmp_path: Path,
) -> None:
    memory = RankMemory(tmp_path, limit_bytes=1000 * MIB)
    agent = ProcessMemory(10, None, 200 * MIB, 200 * MIB)
    first = [
        agent,
        ProcessMemory(11, 0, 300 * MIB, 350 * MIB),
        ProcessMemory(12, 1, 100 * MIB, 100 * MIB),
    ]
    assert not memory.look(first)
    # Rank 1's DataLoader child (a process of its own with RANK=1) adds to rank 1.
    second = [
        *first[:2],
        ProcessMemory(12, 1, 200 * MIB, 200 * MIB),
        ProcessMemory(13, 1, 400 * MIB, 400 * MIB),
    ]
    assert memory.look(second)
    record = json.loads((tmp_path / RANKS_FILE).read_text())
    assert record["ranks"] == {
        "0": {"pid": 11, "peak_rss_bytes": 350 * MIB},
        "1": {"pid": 12, "peak_rss_bytes": 600 * MIB},
    }
    assert record["exceeded"] and record["exceeded_by"] == 1


def test_read_processes_finds_a_torchrun_worker_rank(tmp_path: Path) -> None:
    env = {**os.environ, "RANK": "3", "TORCHELASTIC_RUN_ID": "x"}
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env=env)
    try:
        [found] = read_processes([child.pid])
        assert found.rank == 3 and found.rss_bytes > 0 and found.hwm_bytes >= found.rss_bytes
        assert read_processes([os.getpid()])[0].rank is None  # not one of torchrun's workers
    finally:
        child.kill()
        child.wait()


def test_a_process_past_its_share_cannot_allocate() -> None:
    code = "b = bytearray(600 * 1024 * 1024)"
    bounded = subprocess.run(
        [sys.executable, "-c", code],
        preexec_fn=lambda: bound_process(1024 * MIB, 2),
        capture_output=True,
    )
    assert bounded.returncode != 0 and b"MemoryError" in bounded.stderr
