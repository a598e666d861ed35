"""Submissions against live free memory, and the recommend route."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import redis
from fastapi.testclient import TestClient
from harness import TEST_NODE, make_job
from httpx import Response
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings
from gpudeck.services.cluster.sampler_store import DatabaseSamplerStore
from gpudeck.telemetry.factory import make_provider
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
        store=DatabaseSamplerStore(session_factory),
    )

    def take_sample() -> None:
        sampler.tick()

    return take_sample


def does_not_fit(response: Response) -> float:
    """The GiB by which a refused job is bigger than the largest device, from its message."""
    assert response.status_code == 422, response.text
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "config"], error
    assert error["msg"].startswith("does not fit: the job needs "), error["msg"]
    match = re.search(
        r"([\d.]+) GiB more than the ([\d.]+) GiB that \S+/\d+ \(the largest", error["msg"]
    )
    assert match, error["msg"]
    return float(match.group(1))


def test_a_job_bigger_than_any_device_does_not_fit_by_how_much(
    client: TestClient, db: Session, sampled: Callable[[], None]
) -> None:
    """Issue 18: an idle node answered "only 0 are free"; the job can never fit there."""
    sampled()
    estimate = client.post(
        "/api/estimate", json={"kind": "sae", "config": HUGE, "world_size": 1}
    ).json()["bytes_per_device"]
    room = 80 * 1024**3 - 80 * 1024**3 // 20  # an 80 GiB device less its 5 % safety margin
    for placement in ({"devices": [{"index": 0}]}, {"count": 1}):
        refused = client.post("/api/jobs", json={"kind": "sae", "config": HUGE, **placement})
        assert does_not_fit(refused) == pytest.approx((estimate - room) / 1024**3, abs=0.01)
    assert db.execute(text("SELECT count(*) FROM jobs")).scalar_one() == 0


def test_more_devices_than_the_node_has_names_count(
    client: TestClient, db: Session, sampled: Callable[[], None]
) -> None:
    """Issue 18: nine devices on a smaller node was reported as a batch-size error."""
    sampled()
    body = {"kind": "sae", "config": {**SMALL, "batch_size": 64}, "count": 9}
    refused = client.post("/api/jobs", json=body)
    assert refused.status_code == 422, refused.text
    [error] = refused.json()["detail"]
    assert error["loc"] == ["body", "count"]
    assert error["msg"] == f"node {TEST_NODE} has 8 devices; 9 requested (a job runs on one node)"
    assert db.execute(text("SELECT count(*) FROM jobs")).scalar_one() == 0


def test_devices_and_a_count_together_are_refused(
    client: TestClient, db: Session, sampled: Callable[[], None]
) -> None:
    """Issue 18: the form sent ticked devices and a count; the API must run exactly what was
    asked or refuse, never pick one of the two."""
    sampled()
    body = {"kind": "sae", "config": SMALL, "devices": [{"index": 0}, {"index": 1}], "count": 4}
    refused = client.post("/api/jobs", json=body)
    assert refused.status_code == 422, refused.text
    assert "give exactly one of devices or count" in refused.json()["detail"][0]["msg"]
    assert db.execute(text("SELECT count(*) FROM jobs")).scalar_one() == 0
    assert db.execute(text("SELECT count(*) FROM allocations")).scalar_one() == 0


def test_forced_jobs_past_host_memory_are_a_conflict(
    client: TestClient, db: Session, sampled: Callable[[], None]
) -> None:
    sampled()
    body = {"kind": "sae", "config": HUGE, "devices": [{"index": 0}]}

    # force skips the free-memory check, but simulated devices are CPU processes: four ranks
    # of > 80 GiB do not fit in this machine's memory, whatever force says.
    devices = [{"index": i} for i in range(4)]
    forced = client.post("/api/jobs", json={**body, "devices": devices, "force": True})
    assert forced.status_code == 409, forced.text
    host = forced.json()["detail"]
    assert host["code"] == "insufficient_host_memory" and host["field"] == "devices"
    assert host["bytes_per_device"] > 80 * 1024**3 and host["world_size"] == 4
    assert db.execute(text("SELECT count(*) FROM jobs")).scalar_one() == 0


def test_a_count_job_that_fits_is_placed(
    client: TestClient, db: Session, sampled: Callable[[], None]
) -> None:
    sampled()
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
