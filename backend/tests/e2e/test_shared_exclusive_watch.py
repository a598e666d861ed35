"""Acceptance 4 of issue 37, watched by processes: on one simulated device, two sharing jobs run
at once; an exclusive job submitted meanwhile starts only once no process of either is left, and
a sharing job submitted after it only once no process of the exclusive one is left. A real API,
worker and scheduler; every 10 ms the test reads which jobs have a live process (each job's
guard and every process under it, from its launch record), as the multi-node invariant test
does."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from e2e_helpers import WorkerProcess, rank_alive, wait_status
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
from gpudeck.engine.guard import descendants

DEVICE = 2
TRAIN = {
    "entrypoint": "ddp_train.py",
    "args": ["--steps", "40", "--sleep-s", "0.05", "--seed", "3"],
    "memory_per_device_bytes": 2048 * MIB,
}


class Watch:
    """Which of `jobs` have a live process, every 10 ms: (time, the live ones) per sample.

    A job whose guard and every process seen under it are gone is not looked at again (nothing
    new can appear under a guard that is gone): with psutil's children(recursive=True), which
    reads all of /proc, for every job at every sample, this thread was busy most of the test."""

    def __init__(self, settings: Settings, jobs: list[int]) -> None:
        self.settings, self.jobs = settings, jobs
        self.samples: list[tuple[float, frozenset[int]]] = []
        self._seen: dict[int, set[int]] = {j: set() for j in jobs}
        self._guard: dict[int, int] = {}
        self._ended: set[int] = set()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _learn_guard(self, job_id: int) -> None:
        try:
            launched = json.loads((run_dir(self.settings, job_id) / "launch.json").read_text())
        except (FileNotFoundError, ValueError):
            return
        self._guard[job_id] = launched["pids"][0]

    def _live(self, job_id: int) -> bool:
        guard = self._guard[job_id]
        seen = self._seen[job_id]
        seen.add(guard)
        if rank_alive(guard):
            seen.update(descendants(guard))
        live = any(rank_alive(pid) for pid in seen)
        if not live:
            self._ended.add(job_id)
        return live

    def _run(self) -> None:
        while not self._done.wait(0.01):
            for job_id in self.jobs:
                if job_id not in self._guard:
                    self._learn_guard(job_id)
            following = [j for j in self.jobs if j in self._guard and j not in self._ended]
            live = frozenset(j for j in following if self._live(j))
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


def submit(api: TestClient, share: str, time_limit_s: int = 600) -> int:
    body: dict[str, Any] = {
        "kind": "script",
        "config": TRAIN,
        "devices": [{"index": DEVICE}],
        "share": share,
        "time_limit_s": time_limit_s,
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
    # A longer limit than the two before it: by EASY backfill's rule a job that would end (by
    # its limit) no later than the exclusive job's reserved start may start before it, and it
    # would, were all four first seen in the same scheduler pass (a slow start of the
    # scheduler): then the two sharers' limits end exactly when this one's would.
    after = submit(api, "memory", time_limit_s=900)
    jobs = [first, second, whole, after]
    with Watch(e2e_settings, jobs) as watch:
        for job_id in jobs:
            job = wait_status(api, job_id, TERMINAL, timeout_s=240)
            assert job["status"] == "succeeded", job["error"]
    assert not [live for _, live in watch.samples if whole in live and len(live) > 1]
    assert any({first, second} <= live for _, live in watch.samples)  # they did share
    assert watch.first(whole) > max(watch.last(first), watch.last(second))
    assert watch.first(after) > watch.last(whole)
