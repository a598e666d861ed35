from __future__ import annotations

from fastapi.testclient import TestClient


def test_submit_list_get_cancel(client: TestClient, devices: str) -> None:
    created = client.post(
        "/api/jobs",
        json={"kind": "sae", "config": {"batch_size": 64}, "devices": [{"index": 0}, {"index": 3}]},
    )
    assert created.status_code == 201, created.text
    job = created.json()
    assert job["status"] == "queued"
    assert [(d["index"], d["rank"]) for d in job["devices"]] == [(0, 0), (3, 1)]
    assert job["config"]["d_in"] == 64  # defaults filled in and stored

    assert client.get(f"/api/jobs/{job['id']}").json()["id"] == job["id"]
    listing = client.get("/api/jobs", params={"status": "queued"}).json()
    assert listing["total"] == 1 and listing["items"][0]["id"] == job["id"]

    gpus = {g["index"]: g for g in client.get("/api/gpus").json()}
    assert gpus[0]["held_by"]["job_id"] == job["id"] and gpus[1]["held_by"] is None

    cancelled = client.post(f"/api/jobs/{job['id']}/cancel").json()
    assert cancelled["status"] == "cancelled"
    assert all(g["held_by"] is None for g in client.get("/api/gpus").json())
