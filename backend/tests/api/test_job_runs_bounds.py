"""Out-of-range query values on the job-run endpoints are 422s, never 500s."""

from __future__ import annotations

from fastapi.testclient import TestClient
from harness import make_job
from sqlalchemy.orm import Session


def test_huge_after_step_is_refused(client: TestClient, db: Session, devices: str) -> None:
    job = make_job(db, devices=[0])
    response = client.get(f"/api/jobs/{job.id}/metrics", params={"after_step": 2**70})
    assert response.status_code == 422
    assert client.get(f"/api/jobs/{job.id}/metrics", params={"after_step": 5}).json() == {
        "items": [],
        "last_step": 5,
    }


def test_missing_checkpoint_file_is_404(client: TestClient, db: Session, devices: str) -> None:
    job = make_job(db, devices=[0])
    assert client.get(f"/api/jobs/{job.id}/checkpoints").json() == []
    url = f"/api/jobs/{job.id}/checkpoints/{2**61}/files/cfg.json"
    assert client.get(url).status_code == 404
    assert client.post(f"/api/jobs/{job.id}/resume", json={}).status_code == 409  # not finished
