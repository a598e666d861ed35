"""Jobs have owners: everyone sees devices and holders; only the owner or an admin may cancel
(and resume, and download checkpoints, through the same `OwnedJob` dependency). Audited."""

from __future__ import annotations

from fastapi.testclient import TestClient
from harness import auth_headers
from sqlalchemy import text
from sqlalchemy.orm import Session

JOB = {"kind": "sae", "config": {"batch_size": 64, "steps": 10}, "devices": [{"index": 0}]}


def submit(client: TestClient, token: str) -> dict:  # type: ignore[type-arg]
    response = client.post("/api/jobs", json=JOB, headers=auth_headers(token))
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def test_cross_user_cancel_is_forbidden(
    anonymous: TestClient, devices: str, alice: str, bob: str, admin_token: str, db: Session
) -> None:
    job = submit(anonymous, alice)
    assert job["owner"] == "alice"
    gpus = anonymous.get("/api/gpus", headers=auth_headers(bob)).json()
    assert next(g for g in gpus if g["index"] == 0)["held_by"]["owner"] == "alice"

    refused = anonymous.post(f"/api/jobs/{job['id']}/cancel", headers=auth_headers(bob))
    assert refused.status_code == 403
    assert refused.json()["detail"]["code"] == "forbidden"
    assert (
        anonymous.get(f"/api/jobs/{job['id']}", headers=auth_headers(bob)).json()["status"]
        == "queued"
    )
    missing = anonymous.post("/api/jobs/999999/cancel", headers=auth_headers(bob))
    assert missing.status_code == 404

    ok = anonymous.post(f"/api/jobs/{job['id']}/cancel", headers=auth_headers(alice))
    assert ok.status_code == 200 and ok.json()["status"] == "cancelled"

    second = submit(anonymous, alice)
    by_admin = anonymous.post(f"/api/jobs/{second['id']}/cancel", headers=auth_headers(admin_token))
    assert by_admin.status_code == 200

    events = db.execute(text("SELECT actor, action, target FROM audit_events ORDER BY id")).all()
    assert [tuple(e) for e in events] == [
        ("alice", "job.submit", f"job:{job['id']}"),
        ("alice", "job.cancel", f"job:{job['id']}"),
        ("alice", "job.submit", f"job:{second['id']}"),
        ("admin", "job.cancel", f"job:{second['id']}"),
    ]


def test_owned_job_routes_refuse_other_users(
    anonymous: TestClient, devices: str, alice: str, bob: str
) -> None:
    """Every route that takes a job and changes or downloads it: cancel, resume, checkpoints."""
    job = submit(anonymous, alice)
    schema = anonymous.get("/openapi.json", headers=auth_headers(alice)).json()
    guarded = [
        (method, path)
        for path, item in schema["paths"].items()
        if path.startswith("/api/jobs/{job_id}")
        for method in item
        if method in ("post", "delete", "put", "patch")
        or any(w in path for w in ("checkpoint", "download", "resume"))
    ]
    assert ("post", "/api/jobs/{job_id}/cancel") in guarded
    for method, path in guarded:
        url = path.replace("{job_id}", str(job["id"])).replace("{step}", "1")
        response = anonymous.request(method.upper(), url, headers=auth_headers(bob), json={})
        assert response.status_code == 403, (method, path, response.text)


def test_sign_in_is_audited(anonymous: TestClient, alice: str, db: Session) -> None:
    response = anonymous.post("/api/auth/sign-in", headers=auth_headers(alice))
    expected = {"id": response.json()["id"], "name": "alice", "role": "user", "run_code": False}
    assert response.json() == expected
    row = db.execute(text("SELECT actor, action, at FROM audit_events")).one()
    assert row.actor == "alice" and row.action == "auth.sign_in" and row.at is not None


def test_users_cannot_administer(anonymous: TestClient, alice: str) -> None:
    headers = auth_headers(alice)
    assert anonymous.get("/api/users", headers=headers).status_code == 403
    assert anonymous.post("/api/users", json={"name": "x"}, headers=headers).status_code == 403
    assert anonymous.get("/api/audit", headers=headers).status_code == 403
