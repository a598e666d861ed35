"""A failed job's error holds the end of its rank's log, so whatever the rank printed: other
users see why it ended in one line; the tail is the owner's and the admins', as the logs are."""

from __future__ import annotations

from fastapi.testclient import TestClient
from harness import auth_headers, create_token, make_job
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.models import Job, JobStatus

ERROR = (
    "rank 0 failed; the end of its log:\n"
    "connecting with HF_TOKEN=hf_secretsecretsecret\n"
    "Traceback (most recent call last):\n"
    '  File "train.py", line 3, in <module>\n'
    "RuntimeError: CUDA out of memory"
)


def test_others_see_the_cause_the_owner_sees_the_tail(
    client: TestClient, db: Session, devices: str, session_factory: sessionmaker[Session]
) -> None:
    job = make_job(db, devices=[0], status=JobStatus.failed)
    db.execute(update(Job).where(Job.id == job.id).values(error=ERROR))
    db.commit()
    other = auth_headers(create_token(session_factory, "user", "bob"))

    for seen in (
        client.get(f"/api/jobs/{job.id}", headers=other).json(),
        next(
            j for j in client.get("/api/jobs", headers=other).json()["items"] if j["id"] == job.id
        ),
    ):
        assert "hf_secret" not in str(seen)
        assert seen["error"] == seen["error_summary"] == "rank 0: RuntimeError: CUDA out of memory"

    own = client.get(f"/api/jobs/{job.id}").json()  # the owner is the admin here
    assert own["error"] == ERROR
    assert own["error_summary"] == "rank 0: RuntimeError: CUDA out of memory"
