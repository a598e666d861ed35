"""PATCH /api/sweeps/{id}: max_parallel changed while the sweep runs. Raised, the scheduler's
next pass starts more members; a bad value is a 422 naming the field, another user's sweep a
403, and neither changes anything. (On a Slurm cluster the executor sets the arrays' throttle:
tests/slurm/test_executor_sweep.py.)"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from harness import auth_headers, create_token
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.models import AuditEvent
from gpudeck.scheduler.duties import schedule_queue

SAE = {"d_in": 16, "d_sae": 64, "batch_size": 64, "steps": 10}


def test_raising_max_parallel_starts_more_members_at_the_next_pass(
    client: TestClient, db: Session, devices: str, scheduler: object
) -> None:
    body = {
        "job": {"kind": "sae", "config": SAE, "count": 1},
        "parameters": {"grid": {"seed": list(range(6))}},
        "max_parallel": 1,
    }
    sweep = client.post("/api/sweeps", json=body).json()
    ids = [m["job_id"] for m in sweep["members"]]
    assert schedule_queue(scheduler) == ids[:1]  # type: ignore[arg-type]
    raised = client.patch(f"/api/sweeps/{sweep['id']}", json={"max_parallel": 3})
    assert raised.status_code == 200, raised.text
    assert raised.json()["max_parallel"] == 3
    assert schedule_queue(scheduler) == ids[1:3]  # type: ignore[arg-type]
    actions = db.scalars(select(AuditEvent.detail).where(AuditEvent.action == "sweep.max_parallel"))
    assert list(actions) == [{"max_parallel": 3}]


@pytest.mark.parametrize("value", [0, 2000, "4", None, 2.5])
def test_a_bad_max_parallel_is_a_422_naming_it_and_changes_nothing(
    client: TestClient, devices: str, value: object
) -> None:
    body = {
        "job": {"kind": "sae", "config": SAE, "count": 1},
        "parameters": {"grid": {"seed": [1, 2]}},
        "max_parallel": 1,
    }
    sweep = client.post("/api/sweeps", json=body).json()
    refused = client.patch(f"/api/sweeps/{sweep['id']}", json={"max_parallel": value})
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["loc"][-1] == "max_parallel"
    assert client.get(f"/api/sweeps/{sweep['id']}").json()["max_parallel"] == 1


def test_another_users_sweep_is_refused(
    client: TestClient, devices: str, session_factory: sessionmaker[Session]
) -> None:
    body = {
        "job": {"kind": "sae", "config": SAE, "count": 1},
        "parameters": {"grid": {"seed": [1, 2]}},
        "max_parallel": 1,
    }
    sweep = client.post("/api/sweeps", json=body).json()
    alice = auth_headers(create_token(session_factory, "user", name="alice"))
    refused = client.patch(f"/api/sweeps/{sweep['id']}", json={"max_parallel": 2}, headers=alice)
    assert refused.status_code == 403
    assert client.get(f"/api/sweeps/{sweep['id']}").json()["max_parallel"] == 1
