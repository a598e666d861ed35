"""Many people submitting at once for the same devices: nobody ever gets a device twice."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import httpx
from harness import TEST_NODE, auth_headers, live_server
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.core.config import Settings

CLIENTS = 100
ROUNDS = 10


def random_request(rng: random.Random) -> dict[str, Any]:
    # queue: false, the immediate path: a busy device is a 409 (tests/scheduler covers queueing).
    body: dict[str, Any] = {
        "kind": "sae",
        "config": {"batch_size": 64, "steps": 10},
        "queue": False,
    }
    if rng.random() < 0.25:
        body["count"] = rng.choice([1, 2])
        body["config"]["batch_size"] = 64
    else:
        indices = rng.sample(range(8), rng.choice([1, 2, 3]))
        body["devices"] = [{"index": i, "node": TEST_NODE} for i in indices]
        body["config"]["batch_size"] = 64 * len(indices)
    return body


async def submit_round(url: str, rng: random.Random, token: str) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=CLIENTS)
    headers = auth_headers(token)
    async with httpx.AsyncClient(
        base_url=url, limits=limits, timeout=60, headers=headers
    ) as client:
        bodies = [random_request(rng) for _ in range(CLIENTS)]
        return await asyncio.gather(*(client.post("/api/jobs", json=b) for b in bodies))


def live_double_bookings(db: Session) -> list[Any]:
    db.rollback()
    return db.execute(
        text(
            "SELECT node, gpu_uuid, count(*) FROM allocations WHERE released_at IS NULL "
            "GROUP BY node, gpu_uuid HAVING count(*) > 1"
        )
    ).all()


def test_concurrent_submissions_never_double_book(
    settings: Settings, db: Session, devices: str, admin_token: str
) -> None:
    rng = random.Random(1234)
    with live_server(settings) as url:
        for _ in range(ROUNDS):
            responses = asyncio.run(submit_round(url, rng, admin_token))
            assert {r.status_code for r in responses} <= {201, 409}, [
                r.text for r in responses if r.status_code not in (201, 409)
            ]
            created = [r.json() for r in responses if r.status_code == 201]
            assert created, "every request lost: the test would prove nothing"
            held = [(d["node"], d["uuid"]) for job in created for d in job["devices"]]
            assert len(held) == len(set(held)), "two 201s were given the same device"
            assert live_double_bookings(db) == []
            live = db.execute(
                text("SELECT count(*) FROM allocations WHERE released_at IS NULL")
            ).scalar_one()
            assert live == len(held)
            for job in created:
                cancelled = httpx.post(
                    f"{url}/api/jobs/{job['id']}/cancel",
                    timeout=30,
                    headers=auth_headers(admin_token),
                )
                assert cancelled.status_code == 200
