"""Jobs across nodes through the API: they wait in the queue with a position and a reason like
any other job, may be held or depend on another; a count spread over nodes is validated
strictly (a 422 naming the field) and never changes anything when refused."""

from __future__ import annotations

import pytest
import redis
from fastapi.testclient import TestClient
from harness import register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.services.queue import summary as queue_summary

SAE = {"steps": 10, "batch_size": 64}


@pytest.fixture
def two_nodes(db: Session) -> None:
    register_devices(db, "2x80GiB", node="alpha")
    register_devices(db, "2x80GiB", node="beta")


def post(client: TestClient, **body: object) -> dict[str, object]:
    response = client.post("/api/jobs", json={"kind": "sae", "config": SAE, **body})
    assert response.status_code == 201, response.text
    job: dict[str, object] = client.get(f"/api/jobs/{response.json()['id']}").json()
    return job


def test_a_job_across_nodes_waits_with_its_place_and_reason(
    client: TestClient, two_nodes: None
) -> None:
    holder = post(client, devices=[{"node": "beta", "index": 0}])
    named = post(client, devices=[{"node": "alpha", "index": 0}, {"node": "beta", "index": 0}])
    assert named["status"] == "queued" and named["devices"] == []
    assert named["queue"] == {
        "position": 1,
        "reason_code": "devices_busy",
        "reason": f"devices busy: beta/0 held by job {holder['id']}",
        "expected_start_at": named["queue"]["expected_start_at"],  # type: ignore[index]
        "expected_start_from_time_limits": True,  # its holder has no measured rate yet
    }
    spread = post(client, count=4, nodes=2)
    assert spread["devices"] == [] and (spread["nodes"], spread["devices_per_node"]) == (2, None)
    queue = spread["queue"]
    assert isinstance(queue, dict) and queue["position"] == 2
    assert queue["reason_code"] == "devices_busy"
    assert "needs 1 x 4 or 2 x 2 (nodes x devices)" in queue["reason"]
    held = post(client, count=2, devices_per_node=1, hold=True)
    assert held["queue"]["reason_code"] == "held"  # type: ignore[index]
    listed = [j["id"] for j in client.get("/api/queue").json()["items"]]
    assert listed == [named["id"], spread["id"], held["id"]]
    refused = client.post(
        "/api/jobs", json={"kind": "sae", "config": SAE, "count": 4, "nodes": 2, "queue": False}
    )
    assert refused.status_code == 409 and refused.json()["detail"]["field"] == "count"


def test_a_count_naming_no_node_takes_any_one_node_with_room(
    client: TestClient, two_nodes: None
) -> None:
    """The dashboard's and the CLI's plain `count`, with several nodes: not a 422 asking for a
    node, but one node that has room (now, or when the scheduler finds one)."""
    first = post(client, count=2)
    assert first["status"] != "queued" or first["devices"]
    assert len({d["node"] for d in first["devices"]}) == 1  # type: ignore[union-attr]
    second = post(client, count=2)
    nodes = {d["node"] for d in first["devices"] + second["devices"]}  # type: ignore[operator]
    assert nodes == {"alpha", "beta"} and second["nodes"] == 1
    waiting = post(client, count=2)
    assert waiting["devices"] == [] and waiting["queue"]["reason_code"] == "devices_busy"  # type: ignore[index]
    # no node has 4 devices: refused at once, not queued for ever
    too_many = client.post("/api/jobs", json={"kind": "sae", "config": SAE, "count": 4})
    assert too_many.status_code == 409, too_many.text
    assert too_many.json()["detail"]["code"] == "not_enough_devices"


def test_a_count_over_free_nodes_starts_at_once(client: TestClient, two_nodes: None) -> None:
    job = post(client, count=4, devices_per_node=2)
    assert [(d["rank"], d["node"]) for d in job["devices"]] == [  # type: ignore[union-attr]
        (0, "alpha"),
        (1, "alpha"),
        (2, "beta"),
        (3, "beta"),
    ]
    assert job["node"] == "alpha" and job["queue"] is None


def test_bad_spread_input_is_a_422_naming_the_field_and_changes_nothing(
    client: TestClient, db: Session, two_nodes: None
) -> None:
    cases = [
        ({"count": 4, "nodes": 3}, "nodes"),  # 4 does not split over 3 nodes
        ({"count": 4, "devices_per_node": 3}, "devices_per_node"),
        ({"count": 4, "nodes": 4, "devices_per_node": 2}, "devices_per_node"),  # 4 != 4 x 2
        ({"count": 4, "nodes": True}, "nodes"),  # a bool is not a number
        ({"count": 4, "devices_per_node": 2.0}, "devices_per_node"),
        ({"count": 4, "nodes": "2"}, "nodes"),
        ({"count": 4, "nodes": 0}, "nodes"),
        ({"count": 4, "nodes": 65}, "nodes"),
        ({"nodes": 2}, "nodes"),  # nodes without count
        ({"devices": [{"node": "alpha", "index": 0}], "nodes": 1}, "nodes"),
        ({"devices": [{"node": "alpha", "index": 0}], "devices_per_node": 1}, "devices_per_node"),
        ({"count": 2, "nodes": 2, "node": "alpha"}, "node"),
    ]
    for extra, field in cases:
        response = client.post("/api/jobs", json={"kind": "sae", "config": SAE, **extra})
        assert response.status_code == 422, (extra, response.text)
        locs = [e["loc"] for e in response.json()["detail"]]
        assert ["body", field] in locs, (extra, response.text)
    db.rollback()
    assert db.execute(text("SELECT count(*) FROM jobs")).scalar_one() == 0


def test_the_submit_answer_places_a_job_across_nodes_from_the_last_pass(
    client: TestClient, db: Session, two_nodes: None, redis_client: redis.Redis
) -> None:
    holder = post(client, devices=[{"node": "beta", "index": 0}])
    with Session(db.get_bind()) as session:
        _, summary = queue_summary.compute(session, None, half_life_s=86400)
    queue_summary.publish(redis_client, summary)
    body = {"kind": "sae", "config": SAE}
    named = client.post(
        "/api/jobs",
        json={**body, "devices": [{"node": "alpha", "index": 1}, {"node": "beta", "index": 0}]},
    ).json()
    assert named["queue"]["reason"] == (
        "devices busy: needs 2 on alpha, beta, 1 free after the jobs ahead"
    )
    assert named["queue"]["expected_start_at"] is not None  # the holder's time limit
    spread = client.post("/api/jobs", json={**body, "count": 4, "devices_per_node": 2}).json()
    assert spread["queue"]["reason"] == (
        "devices busy: needs 2 x 2 (nodes x devices) on the nodes, 3 free after the jobs ahead"
    )
    assert holder["status"] == "queued"  # placed, no worker runs it
