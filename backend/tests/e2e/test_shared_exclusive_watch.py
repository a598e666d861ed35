"""Acceptance 4 of issue 37, watched by processes: on one simulated device, two sharing jobs run
at once; an exclusive job submitted meanwhile starts only once no process of either is left, and
a sharing job submitted after it only once no process of the exclusive one is left. A real API,
worker and scheduler; every 10 ms the test reads which jobs have a live process (each job's
guard and every process under it, from its launch record), as the multi-node invariant test
does."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import psutil
from e2e_helpers import WorkerProcess, wait_status
from fastapi.testclient import TestClient
from harness import TEST_NODE
from sqlalchemy import text
from sqlalchemy.orm import Session
from test_script_jobs import (  # noqa: F401  (code_root, script_worker: fixtures)
    MIB,
    TERMINAL,
    code_root,
    run_dir,
    script_worker,
)

from gpudeck.core.config import Settings

DEVICE = 2
TRAIN = {
    "entrypoint": "ddp_train.py",
    "args": ["--steps", "40", "--sleep-s", "0.05", "--seed", "3"],
    "memory_per_device_bytes": 2048 * MIB,
}


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class Watch:
    """Which of `jobs` have a live process, every 10 ms: (time, the live ones) per sample."""

    def __init__(self, settings: Settings, jobs: list[int]) -> None:
        self.settings, self.jobs = settings, jobs
        self.samples: list[tuple[float, frozenset[int]]] = []
        self._seen: dict[int, set[int]] = {j: set() for j in jobs}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _follow(self, job_id: int) -> None:
        try:
            launched = json.loads((run_dir(self.settings, job_id) / "launch.json").read_text())
        except (FileNotFoundError, ValueError):
            return
        guard = launched["pids"][0]
        self._seen[job_id].add(guard)
        with contextlib.suppress(psutil.Error):
            self._seen[job_id].update(c.pid for c in psutil.Process(guard).children(True))

    def _run(self) -> None:
        while not self._done.wait(0.01):
            for job_id in self.jobs:
                self._follow(job_id)
            live = frozenset(j for j in self.jobs if any(alive(p) for p in self._seen[j]))
            self.samples.append((time.monotonic(), live))

    def first(self, job_id: int) -> float:
        return min(t for t, live in self.samples if job_id in live)

    def last(self, job_id: int) -> float:
        return max(t for t, live in self.samples if job_id in live)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


def submit(api: TestClient, share: str) -> int:
    body: dict[str, Any] = {
        "kind": "script",
        "config": TRAIN,
        "devices": [{"index": DEVICE}],
        "share": share,
        "time_limit_s": 600,
    }
    created = api.post("/api/jobs", json=body)
    assert created.status_code == 201, created.text
    return int(created.json()["id"])


def test_whole_and_shared_jobs_never_run_together_on_a_device(
    api: TestClient,
    db: Session,
    script_worker: WorkerProcess,  # noqa: F811
    start_scheduler: Callable[..., WorkerProcess],
    e2e_settings: Settings,
) -> None:
    db.execute(text("UPDATE nodes SET share_memory = true WHERE name = :n"), {"n": TEST_NODE})
    db.commit()
    start_scheduler(GPUDECK_KIND_MODULES="e2e_kinds,gpudeck.kinds.script")
    first, second = submit(api, "memory"), submit(api, "memory")
    whole = submit(api, "exclusive")
    waiting = api.get(f"/api/jobs/{whole}").json()
    assert waiting["devices"] == [] and waiting["queue"]["reason_code"] == "devices_busy"
    after = submit(api, "memory")
    jobs = [first, second, whole, after]
    with Watch(e2e_settings, jobs) as watch:
        for job_id in jobs:
            job = wait_status(api, job_id, TERMINAL, timeout_s=240)
            assert job["status"] == "succeeded", job["error"]
    assert not [live for _, live in watch.samples if whole in live and len(live) > 1]
    assert any({first, second} <= live for _, live in watch.samples)  # they did share
    assert watch.first(whole) > max(watch.last(first), watch.last(second))
    assert watch.first(after) > watch.last(whole)
