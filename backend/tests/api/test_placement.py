"""Submissions against live free memory, and the recommend route."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis
from fastapi.testclient import TestClient
from harness import make_job
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings
from gpudeck.telemetry.provider import make_provider
from gpudeck.telemetry.sampler import Sampler

# Weights alone are 2 x 4096 x 1M x 4 bytes = 32 GiB; with gradients and Adam, past 80 GiB.
HUGE = {"d_in": 4096, "d_sae": 1_048_576, "batch_size": 64, "steps": 10}
SMALL = {"d_in": 64, "d_sae": 512, "batch_size": 64, "steps": 10}


@pytest.fixture
def sampled(
    devices: str,
    settings: Settings,
    redis_client: redis.Redis,
    session_factory: sessionmaker[Session],
) -> Callable[[], None]:
    """Takes one real sample of the simulated devices, through the real sampler, into Redis."""
    sampler = Sampler(
        make_provider(settings),
        node=settings.node_name,
        redis_client=redis_client,
        sessions=session_factory,
    )

    def take_sample() -> None:
        sampler.tick()

    return take_sample


def test_too_little_free_memory_is_a_conflict_with_the_numbers(
    client: TestClient, db: Session, sampled: Callable[[], None]
) -> None:
    sampled()
    body = {"kind": "sae", "config": HUGE, "devices": [{"index": 0}]}
    refused = client.post("/api/jobs", json=body)
    assert refused.status_code == 409, refused.text
    detail = refused.json()["detail"]
    assert detail["code"] == "insufficient_memory" and detail["field"] == "devices"
    assert detail["bytes_per_device"] > 80 * 1024**3
    [short] = detail["devices"]
    assert short["index"] == 0 and short["usable_bytes"] < detail["bytes_per_device"]
    assert db.execute(text("SELECT count(*) FROM jobs")).scalar_one() == 0

    forced = client.post("/api/jobs", json={**body, "force": True})
    assert forced.status_code == 201, forced.text
    assert forced.json()["estimate_bytes_per_device"] == detail["bytes_per_device"]


def test_count_passes_over_devices_without_room(
    client: TestClient, db: Session, sampled: Callable[[], None]
) -> None:
    sampled()
    response = client.post("/api/jobs", json={"kind": "sae", "config": HUGE, "count": 1})
    assert response.status_code == 409
    assert response.json()["detail"]["code"] == "not_enough_devices"
    small = client.post("/api/jobs", json={"kind": "sae", "config": SMALL, "count": 2})
    assert small.status_code == 201
    assert 0 < small.json()["estimate_bytes_per_device"] < 2 * 1024**3


def test_recommend_excludes_held_devices_with_their_holder(
    client: TestClient, db: Session, sampled: Callable[[], None]
) -> None:
    holder = make_job(db, devices=[0, 1])
    sampled()
    response = client.post(
        "/api/gpus/recommend",
        json={"bytes_per_device": 10 * 1024**3, "count": 3, "strategy": "memory"},
    )
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["enough"] and len(result["devices"]) == 3
    chosen = {d["index"] for d in result["devices"]}
    assert chosen.isdisjoint({0, 1})
    excluded = {e["index"]: e for e in result["excluded"]}
    assert excluded[0]["reason"] == "held_by_job" and str(holder.id) in excluded[0]["message"]


def test_recommend_without_telemetry_says_stale(client: TestClient, devices: str) -> None:
    response = client.post("/api/gpus/recommend", json={"bytes_per_device": 1, "count": 1})
    result = response.json()
    assert not result["enough"] and result["devices"] == []
    assert {e["reason"] for e in result["excluded"]} == {"stale_telemetry"}
