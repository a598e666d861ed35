"""Clients submit at once onto eight devices, with queueing: every job runs, and at no moment do
ranks of two jobs run on one device (tests/scheduler/test_queue_race.py does the same with 200
clients and the allocation table; real ranks are slow on a shared test machine). A monitor
samples the rank processes themselves (each job's launch record and its devices from its launch
contract), not the allocation table; the allocation table is checked too."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

import httpx
from e2e_helpers import DeviceMonitor, WorkerProcess, wait_status
from fastapi.testclient import TestClient
from harness import auth_headers, live_server
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.core.config import Settings

CLIENTS = 24
ENDED = {"succeeded", "failed", "cancelled", "lost", "timeout"}


def _body(rng: random.Random) -> dict[str, Any]:
    config = {"steps": 3, "step_sleep_s": 0.01}
    if rng.random() < 0.3:
        return {"kind": "faulty", "config": config, "count": rng.choice([1, 2])}
    indices = rng.sample(range(8), rng.choice([1, 2]))
    return {"kind": "faulty", "config": config, "devices": [{"index": i} for i in indices]}


async def _submit_all(url: str, token: str, bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=CLIENTS)
    async with httpx.AsyncClient(
        base_url=url, limits=limits, timeout=60, headers=auth_headers(token)
    ) as client:
        return await asyncio.gather(*(client.post("/api/jobs", json=b) for b in bodies))


def test_concurrent_submits_with_queueing_never_double_book(
    api: TestClient,
    db: Session,
    admin_token: str,
    e2e_settings: Settings,
    start_worker: Callable[..., WorkerProcess],
    start_scheduler: Callable[..., WorkerProcess],
) -> None:
    start_worker()
    start_scheduler()
    monitor = DeviceMonitor(e2e_settings.data_dir / "jobs")
    monitor.start()
    rng = random.Random(13)
    try:
        with live_server(e2e_settings) as url:
            responses = asyncio.run(
                _submit_all(url, admin_token, [_body(rng) for _ in range(CLIENTS)])
            )
        assert [r.status_code for r in responses] == [201] * CLIENTS, [
            r.text for r in responses if r.status_code != 201
        ][:3]
        ids = [int(r.json()["id"]) for r in responses]
        queued = [r for r in responses if r.json()["devices"] == []]
        assert queued, "nothing queued: the test proves little"
        ended = [wait_status(api, job_id, ENDED, timeout_s=600) for job_id in ids]
    finally:
        monitor.stopped.set()
        monitor.join()
    unsuccessful = {j["id"]: (j["status"], j["error"]) for j in ended if j["status"] != "succeeded"}
    assert unsuccessful == {}
    assert monitor.overlaps == [], f"ranks of two jobs on one device: {monitor.overlaps[:5]}"
    assert len(monitor.ranks) == CLIENTS
    db.rollback()
    # Allocations: every job held its devices, and no two live ones ever remain.
    held = db.execute(text("SELECT count(DISTINCT job_id) FROM allocations")).scalar_one()
    assert held == CLIENTS
    live = db.execute(text("SELECT count(*) FROM allocations WHERE released_at IS NULL"))
    assert live.scalar_one() == 0
