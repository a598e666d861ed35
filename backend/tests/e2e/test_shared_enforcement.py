"""Acceptance 3 of issue 37, end to end: two script jobs share one simulated device through the
API and a real worker; the node's sampler, reading the reservations from the database
(services/cluster/sharing_source.py), kills the one that allocates past its reservation within
2 samples over, and the worker fails it with the sampler's cause; its neighbour finishes with
the same loss curve as alone (fixed seed), and no reservation stays behind."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from e2e_helpers import WorkerProcess, wait_status
from fastapi.testclient import TestClient
from harness import TEST_NODE
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker
from test_script_jobs import (  # noqa: F401  (code_root, script_worker: fixtures)
    ARGS,
    MIB,
    TERMINAL,
    assert_nothing_left,
    code_root,
    final_loss,
    script_worker,
    token_of,
)

from gpudeck.core.config import Settings
from gpudeck.services.cluster.sampler_store import DatabaseSamplerStore
from gpudeck.services.cluster.sharing_source import DatabaseSharingSource
from gpudeck.telemetry.sampler import Sampler
from gpudeck.telemetry.simulated import SimulatedProvider

RESERVED = 256 * MIB + 500 * MIB  # declared + the default CUDA context reserve


@pytest.fixture
def node_sampler(
    e2e_settings: Settings, redis_client: redis.Redis, session_factory: sessionmaker[Session]
) -> Iterator[None]:
    """The node's sampler as `gpudeck sampler` runs it, sharing source included."""
    sampler = Sampler(
        SimulatedProvider(e2e_settings.simulated, TEST_NODE),
        node=TEST_NODE,
        redis_client=redis_client,
        store=DatabaseSamplerStore(session_factory),
        interval_s=0.25,
        sharing=DatabaseSharingSource(session_factory),
    )
    stop = threading.Event()
    thread = threading.Thread(target=sampler.run, args=(stop,))
    thread.start()
    yield
    stop.set()
    thread.join()


def submit_shared(api: TestClient, config: dict[str, Any], device: int) -> int:
    body = {"kind": "script", "config": config, "devices": [{"index": device}], "share": "memory"}
    created = api.post("/api/jobs", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["reserved_bytes_per_device"] == config["memory_per_device_bytes"] + (
        500 * MIB
    )
    return int(created.json()["id"])


def losses(api: TestClient, job_id: int) -> list[tuple[int, float]]:
    items = api.get(f"/api/jobs/{job_id}/metrics").json()["items"]
    return [(p["step"], p["metrics"]["loss"]) for p in items if "loss" in p["metrics"]]


def test_a_job_over_its_share_dies_alone_and_its_neighbour_runs_as_if_alone(
    api: TestClient,
    db: Session,
    script_worker: WorkerProcess,  # noqa: F811
    node_sampler: None,
    e2e_settings: Settings,
) -> None:
    db.execute(text("UPDATE nodes SET share_memory = true WHERE name = :n"), {"n": TEST_NODE})
    db.commit()
    hog_args = ["--hog-rank", "0", "--most-mib", "2048"]
    hog = submit_shared(
        api,
        {"entrypoint": "hog_memory.py", "args": hog_args, "memory_per_device_bytes": 256 * MIB},
        0,
    )
    neighbour = submit_shared(
        api, {"entrypoint": "ddp_train.py", "args": ARGS, "memory_per_device_bytes": 2048 * MIB}, 0
    )
    killed = wait_status(api, hog, TERMINAL)
    assert killed["status"] == "failed", killed
    summary = killed["error_summary"]
    assert summary.startswith("used ") and summary.endswith(
        f"of its 756 MiB reservation on {TEST_NODE}/0"
    ), summary
    number, unit = summary.split()[1:3]
    used_mib = float(number) * (1024 if unit == "GiB" else 1)
    # Killed on the 2nd sample over, well before it took all it asks for.
    assert RESERVED / MIB < used_mib < 2048, summary
    assert_nothing_left(e2e_settings, hog, token_of(e2e_settings, hog))
    shared = wait_status(api, neighbour, TERMINAL)
    assert shared["status"] == "succeeded", shared["error"]
    # The same job alone, on a device of its own: the same loss curve, value for value.
    alone = api.post(
        "/api/jobs",
        json={
            "kind": "script",
            "config": {"entrypoint": "ddp_train.py", "args": ARGS},
            "devices": [{"index": 1}],
        },
    ).json()["id"]
    assert wait_status(api, alone, TERMINAL)["status"] == "succeeded"
    assert losses(api, neighbour) == losses(api, alone) and losses(api, alone)
    assert final_loss(e2e_settings, neighbour) == final_loss(e2e_settings, alone)
    live = db.scalar(text("SELECT count(*) FROM allocations WHERE released_at IS NULL"))
    assert live == 0
