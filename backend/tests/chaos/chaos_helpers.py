"""What every chaos test checks after its fault: the API answers (503, never 500, while a
store is down), the job ends in the right state, its devices are free, none of its processes is
left, and no job record is lost."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import psutil
from run_harness import GpudeckRun, running

HEARTBEAT_INTERVAL_S = 1.0
LEASE_S = 6.0
TERMINAL = {"succeeded", "failed", "cancelled", "lost", "timeout"}
# A `faulty` job (tests/e2e/e2e_kinds.py, loaded by `gpudeck run`'s parts: conftest.py): a real
# DDP step over gloo on each of its 2 ranks, a metric and a progress event every step, paced by
# a sleep. A case needs a running multi-rank job while its fault is injected, not an SAE's
# arithmetic: an SAE trained at full speed through every case, ~80 CPU-seconds in all. Ten
# steps a second step past any check (`_still_running` waits 2 s or more, a cancel is heard
# within a step) and 100,000 steps last over 2 hours whatever the load: no case outlives it.
JOB_KIND = "faulty"
JOB_CONFIG: dict[str, Any] = {"steps": 100_000, "step_sleep_s": 0.1}


def get(client: httpx.Client, path: str) -> httpx.Response | None:
    """A GET that reads a refused or reset connection (the API restarting) as no answer."""
    try:
        return client.get(path)
    except httpx.TransportError:
        return None


def assert_answers_or_503(client: httpx.Client) -> int | None:
    """During a store outage: 200, or 503 naming a Retry-After; never a 500 and never a hang."""
    started = time.monotonic()
    response = get(client, "/api/jobs")
    assert time.monotonic() - started < 2.5, "a request hung during a store outage"
    if response is None:
        return None
    assert response.status_code in (200, 503), (response.status_code, response.text[:500])
    if response.status_code == 503:
        assert response.headers.get("Retry-After"), response.headers
    return response.status_code


def job(client: httpx.Client, job_id: int) -> dict[str, Any] | None:
    response = get(client, f"/api/jobs/{job_id}")
    if response is None or response.status_code != 200:
        return None
    body: dict[str, Any] = response.json()
    return body


def wait_job(
    client: httpx.Client, job_id: int, statuses: set[str], timeout_s: float
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = job(client, job_id) or last
        if last is not None and last["status"] in statuses:
            return last
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} not {statuses} in {timeout_s} s: {last}")


def start_job(run: GpudeckRun, client: httpx.Client) -> tuple[int, dict[str, Any]]:
    """A 2-rank job, running and past its first steps; with its launch record."""
    body = {
        "kind": JOB_KIND,
        "config": JOB_CONFIG,
        "devices": [{"index": 0}, {"index": 1}],
        "queue": False,  # a 409 while the last case's job still holds them: retry
    }
    deadline = time.monotonic() + 60
    while (response := client.post("/api/jobs", json=body)).status_code == 409:
        assert time.monotonic() < deadline, response.text  # the last case's devices, held
        time.sleep(0.2)
    assert response.status_code == 201, response.text
    job_id = int(response.json()["id"])
    wait_job(client, job_id, {"running"}, timeout_s=180)  # a restarted worker warms up first
    deadline = time.monotonic() + 60
    while ((job(client, job_id) or {}).get("progress") or {}).get("step", 0) < 1:
        assert time.monotonic() < deadline, job(client, job_id)
        time.sleep(0.1)
    path = run.data_dir / "jobs" / str(job_id) / "launch.json"
    return job_id, json.loads(path.read_text())


def ranks(record: dict[str, Any]) -> list[psutil.Process]:
    return [psutil.Process(pid) for pid in record["pids"]]


def group_members(pgid: int) -> list[int]:
    members = []
    for process in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                members.append(process.pid)
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass
    return members


def assert_job_cleaned_up(
    client: httpx.Client, job_id: int, record: dict[str, Any], rank_processes: list[psutil.Process]
) -> None:
    """Terminal means: none of its processes can run, its devices are free."""
    final = job(client, job_id)
    assert final is not None and final["status"] in TERMINAL, final
    assert running(rank_processes) == [], f"job {job_id} is {final['status']} with ranks alive"
    assert group_members(record["pgid"]) == []
    gpus = client.get("/api/gpus").json()
    assert [g for g in gpus if g["held_by"]] == [], gpus


def stop_job(client: httpx.Client, job_id: int) -> dict[str, Any]:
    """Cancel a job that survived its fault; it must end `cancelled` (after a checkpoint)."""
    assert client.post(f"/api/jobs/{job_id}/cancel").status_code == 200
    return wait_job(client, job_id, TERMINAL, timeout_s=60)


def assert_no_record_lost(client: httpx.Client, job_ids: list[int]) -> None:
    listed = {j["id"] for j in client.get("/api/jobs", params={"limit": 200}).json()["items"]}
    assert set(job_ids) <= listed, (job_ids, listed)


def wait_restarted(run: GpudeckRun, name: str, old_pid: int, timeout_s: float = 30) -> int:
    """The supervisor logged the death and started `name` again (a new process)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if f"{name} died (killed by SIGKILL); restarting it in" in run.log():
            try:
                pid = run.postmaster().pid if name == "postgres" else run.part(name).pid
            except (LookupError, FileNotFoundError, ValueError, psutil.NoSuchProcess):
                pid = old_pid
            if pid != old_pid:
                return pid
        time.sleep(0.1)
    raise AssertionError(f"{name} was not restarted:\n{run.log()[-4000:]}")


@dataclass
class Probe:
    """What the API answered while a fault was in progress; `errors` are asserted by the test
    after its checks on the job, so one failure does not hide the other."""

    answers: list[Any] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)

    def assert_ok(self) -> None:
        if self.errors:
            raise self.errors[0]


@contextmanager
def outage(client: httpx.Client, check: Callable[[httpx.Client], object]) -> Iterator[Probe]:
    """Probe the API every 0.2 s while the body runs (the fault is in progress)."""
    probe = Probe()
    done = threading.Event()

    def run() -> None:
        while not done.is_set():
            try:
                probe.answers.append(check(client))
            except BaseException as exc:  # reported by the test, not lost in the thread
                probe.errors.append(exc)
                return
            done.wait(0.2)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield probe
    finally:
        done.set()
        thread.join()


def sigkill(process: psutil.Process) -> None:
    os.kill(process.pid, signal.SIGKILL)
