"""The scheduler with a real `gpudeck scheduler`, `gpudeck worker`, Postgres, Redis and DDP ranks:
a job onto busy devices waits and starts by itself, in order, across a scheduler restart; a
dependency chain runs in order and a failure cancels the rest; a time limit stops a job with a
final checkpoint and ends it `timeout`; a preempted job resumes from its checkpoint."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from e2e_helpers import WorkerProcess, wait_status
from fastapi.testclient import TestClient
from test_job_lifecycle import SAE_CONFIG, TERMINAL, assert_nothing_left

from gpudeck.core.config import Settings

ENDED = TERMINAL | {"timeout"}


def _submit(api: TestClient, config: dict[str, Any], **body: Any) -> dict[str, Any]:
    kind = body.pop("kind", "faulty")
    response = api.post("/api/jobs", json={"kind": kind, "config": config, **body})
    assert response.status_code == 201, response.text
    job: dict[str, Any] = api.get(f"/api/jobs/{response.json()['id']}").json()
    return job


def _wait_step(api: TestClient, job_id: int, step: int) -> None:
    deadline = time.monotonic() + 60
    while api.get(f"/api/jobs/{job_id}").json()["progress"]["step"] < step:
        assert time.monotonic() < deadline, f"job {job_id} did not reach step {step}"
        time.sleep(0.1)


def _at(job: dict[str, Any], field: str) -> datetime:
    return datetime.fromisoformat(job[field])


def test_a_job_on_busy_devices_waits_then_starts_by_itself_across_a_restart(
    api: TestClient,
    start_worker: Callable[..., WorkerProcess],
    start_scheduler: Callable[..., WorkerProcess],
    e2e_settings: Settings,
) -> None:
    start_worker()
    scheduler = start_scheduler()
    holder = _submit(api, {"steps": 60, "step_sleep_s": 0.05}, devices=[{"index": 0}, {"index": 1}])
    wait_status(api, holder["id"], {"running"})
    waiter = _submit(api, {"steps": 5}, devices=[{"index": 1}, {"index": 2}])
    assert waiter["status"] == "queued" and waiter["devices"] == []
    assert waiter["queue"]["reason_code"] == "devices_busy"
    assert f"/1 held by job {holder['id']}" in waiter["queue"]["reason"]
    assert waiter["queue"]["expected_start_at"] is not None

    # The scheduler goes away while the job waits; the queue is in Postgres, a new one finds it.
    scheduler.stop()
    start_scheduler()
    first = wait_status(api, holder["id"], ENDED)
    assert first["status"] == "succeeded"
    second = wait_status(api, waiter["id"], ENDED)
    assert second["status"] == "succeeded", second
    assert _at(second, "started_at") >= _at(first, "finished_at")
    assert [d["index"] for d in second["devices"]] == [1, 2]
    assert_nothing_left(e2e_settings, api, waiter["id"])


def test_dependency_chain_runs_in_order_and_a_failure_cancels_the_rest(
    api: TestClient,
    start_worker: Callable[..., WorkerProcess],
    start_scheduler: Callable[..., WorkerProcess],
) -> None:
    start_worker()
    start_scheduler()
    quick = {"steps": 10, "step_sleep_s": 0.02}
    # `a` held until b is read: a quick `a` could otherwise end, and b start, before the read.
    a = _submit(api, quick, count=1, hold=True)
    b = _submit(api, quick, count=1, depends_on=[a["id"]])
    c = _submit(api, quick, count=1, depends_on=[b["id"]])
    assert b["queue"]["reason_code"] == "dependency" and b["queue"]["expected_start_at"] is None
    assert api.post(f"/api/jobs/{a['id']}/release").status_code == 200
    failing = _submit(api, {**quick, "fail_at_step": 2}, count=1)
    d = _submit(api, quick, count=1, depends_on=[failing["id"]])
    e = _submit(api, quick, count=1, depends_on=[d["id"], a["id"]])

    done = {j["id"]: wait_status(api, j["id"], ENDED) for j in (a, b, c, failing, d, e)}
    assert [done[j["id"]]["status"] for j in (a, b, c)] == ["succeeded"] * 3
    assert _at(done[b["id"]], "started_at") >= _at(done[a["id"]], "finished_at")
    assert _at(done[c["id"]], "started_at") >= _at(done[b["id"]], "finished_at")
    assert done[failing["id"]]["status"] == "failed"
    for job, cause in ((d, failing), (e, d)):
        ended = done[job["id"]]
        assert ended["status"] == "cancelled" and ended["started_at"] is None
        assert f"dependency job {cause['id']}" in ended["error"], ended


def test_time_limit_stops_the_job_with_a_final_checkpoint(
    api: TestClient, start_worker: Callable[..., WorkerProcess], e2e_settings: Settings
) -> None:
    start_worker()
    config = {**SAE_CONFIG, "steps": 100_000, "checkpoint_interval": 100_000}
    job = _submit(api, config, kind="sae", devices=[{"index": 4}, {"index": 5}], time_limit_s=4)
    ended = wait_status(api, job["id"], ENDED, timeout_s=180)
    assert ended["status"] == "timeout", ended
    assert "time limit of 4 s" in ended["error"]
    assert 0 < ended["progress"]["step"] < 100_000
    checkpoints = api.get(f"/api/jobs/{job['id']}/checkpoints").json()
    assert len(checkpoints) == 1 and checkpoints[0]["step"] >= 1  # the final one
    assert_nothing_left(e2e_settings, api, job["id"])


def test_a_preempted_job_resumes_from_its_checkpoint_and_its_steps_continue(
    api: TestClient,
    start_worker: Callable[..., WorkerProcess],
    start_scheduler: Callable[..., WorkerProcess],
    e2e_settings: Settings,
) -> None:
    start_worker()
    start_scheduler()
    config = {**SAE_CONFIG, "steps": 100_000, "checkpoint_interval": 100_000, "metrics_interval": 1}
    low = _submit(api, config, kind="sae", devices=[{"index": 6}, {"index": 7}], preemptible=True)
    wait_status(api, low["id"], {"running"}, timeout_s=120)
    _wait_step(api, low["id"], 5)
    high = _submit(api, {"steps": 5}, devices=[{"index": 7}], priority=5)
    assert high["status"] == "queued"

    # The low job stops with a final checkpoint, waits again, and the high one runs first.
    first = wait_status(api, high["id"], ENDED, timeout_s=120)
    assert first["status"] == "succeeded", first
    resumed = wait_status(api, low["id"], {"running"}, timeout_s=120)
    segments = api.get(f"/api/jobs/{low['id']}/segments").json()
    assert [s["outcome"] for s in segments] == ["preempted", None]
    assert segments[0]["reason"] == f"preempted by job {high['id']}"
    stopped_at = segments[0]["last_step"]
    assert stopped_at > 0 and resumed["resume_from_job_id"] is None
    assert _at(first, "started_at") >= datetime.fromisoformat(segments[0]["ended_at"])
    _wait_step(api, low["id"], stopped_at + 5)
    api.post(f"/api/jobs/{low['id']}/cancel")
    ended = wait_status(api, low["id"], ENDED, timeout_s=60)
    assert ended["status"] == "cancelled"

    # One loss curve: the steps after the resume follow the checkpoint's, none from 0 again.
    steps = [p["step"] for p in api.get(f"/api/jobs/{low['id']}/metrics").json()["items"]]
    assert steps == sorted(set(steps)) and steps[-1] > stopped_at
    assert any(s > stopped_at for s in steps) and stopped_at in steps
    assert_nothing_left(e2e_settings, api, low["id"])
