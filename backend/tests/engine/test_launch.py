"""The launcher: torchrun's environment, one process group per job, warm and cold starts,
stopping, and ranks that die with their worker."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from multiprocessing import forkserver
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

import pytest

from gpudeck.engine.contract import EventsTarget, JobLaunch
from gpudeck.engine.launch import (
    PRELOAD,
    Launcher,
    RankGroup,
    group_alive,
    threads_per_rank,
)

HERE = Path(__file__).resolve().parent


def test_rank_environment_is_torchruns(tmp_path: Path) -> None:
    launch = request(tmp_path, 1, {}).replace(
        device_type="cuda", device_indices=(5, 3), master_port=29511, num_threads=4
    )
    env = launch.rank(1).environment()
    assert env["RANK"] == env["LOCAL_RANK"] == "1"
    assert env["WORLD_SIZE"] == env["LOCAL_WORLD_SIZE"] == "2"
    assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("127.0.0.1", "29511")
    assert env["CUDA_VISIBLE_DEVICES"] == "3" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["OMP_NUM_THREADS"] == "4" and env["TORCHELASTIC_RUN_ID"] == "gpudeck-1"
    cpu = request(tmp_path, 1, {}, world=1).rank(0).environment()
    assert cpu["CUDA_VISIBLE_DEVICES"] == ""  # simulated devices never see a real GPU


def test_a_second_node_numbers_its_ranks_after_the_first(tmp_path: Path) -> None:
    launch = request(tmp_path, 1, {}).replace(
        node_rank=1, nnodes=2, rank_offset=2, total_world_size=4
    )
    env = launch.rank(1).environment()
    assert (env["RANK"], env["LOCAL_RANK"], env["GROUP_RANK"]) == ("3", "1", "1")
    assert (env["WORLD_SIZE"], env["LOCAL_WORLD_SIZE"], env["GROUP_WORLD_SIZE"]) == ("4", "2", "2")


def test_the_contract_survives_its_serialisation(tmp_path: Path) -> None:
    launch = request(tmp_path, 7, {"a": [1, 2]}).replace(
        resume_from="/x", events=EventsTarget("redis://h:1/0", "s"), keep_checkpoints=5
    )
    assert JobLaunch.from_json(launch.to_json()) == launch


def test_threads_split_the_cores() -> None:
    assert threads_per_rank(2, cpus=16) == 8
    assert threads_per_rank(4, cpus=2) == 1
    # One device's share when the node's devices are known: not every core for one rank.
    assert threads_per_rank(1, cpus=64, node_devices=8) == 8
    assert threads_per_rank(4, cpus=16, node_devices=2) == 4  # more ranks than devices here
    assert threads_per_rank(1, cpus=2, node_devices=8) == 1


@pytest.fixture(scope="module")
def launcher() -> Iterator[Launcher]:
    # multiprocessing has one forkserver per process; another test module may have started it
    # with its own preload and environment. A worker owns its process, so here we start afresh.
    forkserver._forkserver._stop()  # type: ignore[attr-defined]
    os.environ["GPUDECK_KIND_MODULES"] = "launch_kinds"  # inherited by the forkserver
    sys.path.insert(0, str(HERE))
    launcher = Launcher([*PRELOAD, "launch_kinds"])
    launcher.warm_up()
    assert launcher.wait_warm(240)
    yield launcher
    os.environ.pop("GPUDECK_KIND_MODULES", None)
    forkserver._forkserver._stop()  # type: ignore[attr-defined]


def request(tmp_path: Path, job_id: int, config: dict[str, Any], world: int = 2) -> JobLaunch:
    return JobLaunch(
        job_id=job_id,
        kind="envdump",
        config=config,
        run_dir=str(tmp_path / "run"),
        data_dir=str(tmp_path),
        checkpoint_dir=str(tmp_path / "ckpt"),
        device_type="cpu",
        device_indices=tuple(range(world)),
    )


def finish(group: RankGroup, timeout_s: float = 60) -> dict[int, int]:
    deadline = time.monotonic() + timeout_s
    while not group.done and time.monotonic() < deadline:
        group.wait(0.5)
    codes = group.kill()
    group.close()
    return codes


def test_warm_ranks_get_the_contract_and_their_own_group(
    launcher: Launcher, tmp_path: Path
) -> None:
    group = launcher.launch(request(tmp_path, 1, {}))
    assert group.warm
    assert finish(group) == {0: 0, 1: 0}
    records = [json.loads((tmp_path / "run" / f"env_rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["RANK"] for r in records] == ["0", "1"]
    assert {r["MASTER_PORT"] for r in records} == {str(group.master_port)}
    assert {r["pgid"] for r in records} == {group.pgid} and group.pgid != os.getpgrp()
    assert all(r["backend"] == "gloo" and not r["cuda_initialized"] for r in records)
    assert all(r["threads"] == threads_per_rank(2) for r in records)
    assert "rank 1 says hello" in (tmp_path / "run" / "rank1.log").read_text()
    assert not group_alive(group.pgid)
    # The run dir keeps the contract the ranks got, port and threads filled in.
    written = JobLaunch.from_json((tmp_path / "run" / "contract.json").read_text())
    assert written == request(tmp_path, 1, {}).replace(
        master_port=group.master_port, num_threads=threads_per_rank(2)
    )


def test_a_clean_exit_stays_clean_while_another_thread_reaps_children(
    launcher: Launcher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every Process.start() polls all children of the worker (multiprocessing's _cleanup), so
    another job's start reads a rank's exit status at the moment its supervisor does. With two
    readers of the forkserver's status pipe, CPython's loser read EOF and the job failed with
    "rank 0 exited with code 255" (python/cpython#130895)."""
    group = launcher.launch(request(tmp_path, 3, {}, world=1))
    assert wait([p.sentinel for p in group.processes], timeout=60)  # exited, status unread
    read_signed = forkserver.read_signed

    def slow_read_signed(fd: int) -> int:
        time.sleep(0.2)  # widen the window between "the pipe is readable" and the read
        return read_signed(fd)

    monkeypatch.setattr(forkserver, "read_signed", slow_read_signed)
    another_start = threading.Thread(target=multiprocessing.active_children)
    another_start.start()
    time.sleep(0.05)
    assert group.poll() == {0: 0}
    another_start.join()
    assert finish(group) == {0: 0}


def test_stop_lets_ranks_finish_then_nothing_is_left(launcher: Launcher, tmp_path: Path) -> None:
    group = launcher.launch(request(tmp_path, 2, {"sleep_s": 600}))
    while not (tmp_path / "run" / "env_rank1.json").exists():
        time.sleep(0.05)
    codes = group.stop(grace_s=30)
    group.close()
    assert codes == {0: 0, 1: 0}  # they saw the stop request and returned
    assert not group_alive(group.pgid)


def test_cold_start_when_the_forkserver_died(launcher: Launcher, tmp_path: Path) -> None:
    pid = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    group = launcher.launch(request(tmp_path, 3, {}))
    assert not group.warm
    assert finish(group, timeout_s=120) == {0: 0, 1: 0}
    assert launcher.wait_warm(240)  # warmed again in the background
    again = launcher.launch(request(tmp_path / "again", 4, {}))
    assert again.warm and finish(again) == {0: 0, 1: 0}


LAUNCH_AND_WAIT = """
import json, sys, time
sys.path.insert(0, {here!r})
from pathlib import Path
from gpudeck.engine.contract import JobLaunch
from gpudeck.engine.launch import PRELOAD, Launcher
if __name__ == "__main__":
    launcher = Launcher([*PRELOAD, "launch_kinds"]); launcher.warm_up(); launcher.wait_warm(240)
    tmp = Path({tmp!r})
    launch = JobLaunch(job_id=5, kind="envdump", config={{"sleep_s": 600}}, run_dir=str(tmp),
                       data_dir=str(tmp), checkpoint_dir=str(tmp / "ckpt"), device_type="cpu",
                       device_indices=(0, 1))
    group = launcher.launch(launch)
    print(group.pgid, flush=True)
    time.sleep(600)
"""


def test_ranks_die_with_their_worker(tmp_path: Path) -> None:
    script = LAUNCH_AND_WAIT.format(here=str(HERE), tmp=str(tmp_path))
    env = {**os.environ, "GPUDECK_KIND_MODULES": "launch_kinds"}
    owner = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, env=env, start_new_session=True
    )
    try:
        assert owner.stdout is not None
        pgid = int(owner.stdout.readline())
        while not (tmp_path / "env_rank1.json").exists():
            time.sleep(0.05)
        owner.send_signal(signal.SIGKILL)  # the "worker" dies without a word
        owner.wait()
        deadline = time.monotonic() + 10
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not group_alive(pgid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(owner.pid, signal.SIGKILL)  # its forkserver, if still there


def test_a_later_node_without_the_first_nodes_port_is_refused_not_half_started(
    tmp_path: Path,
) -> None:
    # Node rank 1 joins the store node rank 0 hosts: with no port to join it cannot start.
    launch = request(tmp_path, 9, {}).replace(
        nnodes=2, node_rank=1, rank_offset=2, total_world_size=4
    )
    with pytest.raises(ValueError, match="node rank 1 has no port"):
        Launcher().launch(launch)
    assert not (tmp_path / "run").exists()
