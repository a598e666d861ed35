"""Helpers for the end-to-end tests: the worker subprocess, waiting on jobs, watching ranks."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from fastapi.testclient import TestClient
from harness import TEST_NODE

from gpudeck.core.config import Settings
from gpudeck.core.linux import die_with_parent
from gpudeck.scheduler.wake import conninfo
from gpudeck.services.jobs.state import WAKE_CHANNEL

HERE = Path(__file__).resolve().parent
BACKEND = HERE.parents[1]
HEARTBEAT_INTERVAL_S = 0.5
LEASE_S = 4.0


@dataclass
class WorkerProcess:
    proc: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout_s: float = 180) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = self.log()
            if "warm launcher ready" in text and " ready." in text:
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited {self.proc.returncode}:\n{text[-4000:]}")
            time.sleep(0.2)
        raise RuntimeError(f"worker not ready:\n{self.log()[-4000:]}")

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout_s: float = 60) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        with contextlib.suppress(ProcessLookupError):  # the forkserver, if it is still there
            os.killpg(self.proc.pid, signal.SIGKILL)
        return int(self.proc.returncode)


def spawn_part(args: list[str], env: dict[str, str], log_path: Path) -> WorkerProcess:
    """`python -m gpudeck <args>` in its own session, output to `log_path`."""
    with log_path.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gpudeck", *args],
            cwd=BACKEND,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # A test run killed before its fixtures' teardown must not leave a part behind that
            # takes the next run's jobs from the shared Redis.
            preexec_fn=lambda: die_with_parent(signal.SIGTERM),
        )
    return WorkerProcess(proc, log_path)


def worker_env(settings: Settings, **overrides: str) -> dict[str, str]:
    env = {
        **os.environ,
        "GPUDECK_DATABASE_URL": str(settings.database_url),
        "GPUDECK_REDIS_URL": str(settings.redis_url),
        "GPUDECK_DATA_DIR": str(settings.data_dir),
        "GPUDECK_NODE_NAME": TEST_NODE,
        "GPUDECK_DEVICE_PROVIDER": "simulated",
        "GPUDECK_SIMULATED_DEVICES": "8x80GiB",
        "GPUDECK_HEARTBEAT_INTERVAL_S": str(HEARTBEAT_INTERVAL_S),
        "GPUDECK_HEARTBEAT_LEASE_S": str(LEASE_S),
        "GPUDECK_CANCEL_GRACE_S": "30",
        "GPUDECK_KIND_MODULES": "e2e_kinds",
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    env.update(overrides)
    return env


# The statuses a job enters in a transaction that NOTIFYs the scheduler's channel (the job's
# devices freed: services/jobs/state.py); a wait for one of them hears it at its commit.
NOTIFIED = {"succeeded", "failed", "cancelled", "lost", "timeout", "stopped_early", "queued"}
# A wait for them still reads the job this often: a wake-up lost to a dropped connection, or a
# status another way sets, costs that much time, never the test.
HEARD_OR_EVERY_S = 1.0


def wait_status(
    api: TestClient, job_id: int, statuses: set[str], timeout_s: float = 120
) -> dict[str, Any]:
    """The job once its status is one of `statuses`. A GET of a job costs the test process
    ~25 ms of CPU: read ten times a second, a wait kept a quarter of a core busy, so a wait for
    an end reads the job again when the product says devices were freed (or every second)."""
    deadline = time.monotonic() + timeout_s
    with _woken_by_ends(api, statuses) as wait:
        while True:
            job: dict[str, Any] = api.get(f"/api/jobs/{job_id}").json()
            if job["status"] in statuses:
                return job
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} is {job['status']}, not {statuses}: {job}")
            wait()


@contextlib.contextmanager
def _woken_by_ends(api: TestClient, statuses: set[str]) -> Iterator[Callable[[], None]]:
    """A wait until the scheduler's channel is notified (LISTENing from before the first read,
    so no commit is missed), when every status waited for is notified; else a 0.1 s sleep."""
    settings = getattr(api.app.state, "settings", None) if hasattr(api, "app") else None
    if settings is None or not statuses <= NOTIFIED:
        yield lambda: time.sleep(0.1)
        return
    with psycopg.connect(conninfo(settings.sqlalchemy_url), autocommit=True) as conn:
        conn.execute(f"LISTEN {WAKE_CHANNEL}")

        def wait() -> None:
            for _ in conn.notifies(timeout=HEARD_OR_EVERY_S, stop_after=1):
                pass

        yield wait


def launch_record(settings: Settings, job_id: int) -> dict[str, Any]:
    path = settings.data_dir / "jobs" / str(job_id) / "launch.json"
    deadline = time.monotonic() + 60
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"no launch record for job {job_id}")
        time.sleep(0.05)
    record: dict[str, Any] = json.loads(path.read_text())
    return record


def rank_alive(pid: int) -> bool:
    """Running or sleeping, not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


class DeviceMonitor(threading.Thread):
    """Samples, every `every_s`, which jobs have a live rank on which device: the rank processes
    themselves (each job's launch record, its devices from its launch contract), not the
    allocation table. `overlaps` lists each sample that found two jobs on one device."""

    def __init__(self, jobs_dir: Path, every_s: float = 0.01) -> None:
        super().__init__(daemon=True)
        self.jobs_dir = jobs_dir
        self.every_s = every_s
        self.ranks: dict[int, tuple[list[int], list[int]]] = {}  # job -> (pids, devices)
        self.overlaps: list[tuple[int, set[int]]] = []
        self.stopped = threading.Event()
        # Jobs whose ranks have all ended: a rank never comes back, so they are not read again
        # (every sample read each rank of every job so far: 60 jobs, 120 reads every 3 ms).
        self._ended: set[int] = set()

    def _learn(self) -> None:
        # Only the directories of jobs not learned yet are looked into: a glob of every job's
        # launch record each sample (60 jobs, every 3 ms) was most of what a sample cost.
        for name in os.listdir(self.jobs_dir) if self.jobs_dir.is_dir() else ():
            if not name.isdigit() or int(name) in self.ranks:
                continue
            job_id = int(name)
            record = self.jobs_dir / name / "launch.json"
            # A record written a moment ago may not parse yet: read it next time.
            with contextlib.suppress(OSError, ValueError, KeyError):
                pids = json.loads(record.read_text())["pids"]
                contract = json.loads((record.parent / "contract.json").read_text())
                self.ranks[job_id] = (pids, list(contract["device_indices"]))

    def sample(self) -> dict[int, set[int]]:
        """The jobs with a live rank on each device, now."""
        self._learn()
        on_device: dict[int, set[int]] = {}
        for job_id, (pids, indices) in list(self.ranks.items()):
            if job_id in self._ended:
                continue
            if not any(map(rank_alive, pids)):
                self._ended.add(job_id)
                continue
            for index in indices:
                on_device.setdefault(index, set()).add(job_id)
        return on_device

    def run(self) -> None:
        while not self.stopped.wait(self.every_s):
            on_device = self.sample()
            self.overlaps += [(i, jobs) for i, jobs in on_device.items() if len(jobs) > 1]


def pip_install_package(source: Path, build_dir: Path, target: Path) -> Path:
    """A plug-in package installed (built, with its entry point metadata) into `target`, as a
    lab would pip-install a kind; copied to `build_dir` first, since setuptools builds in the
    source tree and must not write into the repo's."""
    copy = build_dir / source.name
    shutil.copytree(source, copy)
    command = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    command += ["--no-deps", "--no-build-isolation", "--target", str(target), str(copy)]
    subprocess.run(command, check=True, capture_output=True)
    return target
