"""Tags and notes on a job (PATCH /api/jobs/{id}/labels) and the jobs list that finds jobs by
them (?tag=, ?q=, ?id=): what `gpudeck tag`, the dashboard's filter and its compare page use."""

from __future__ import annotations

from fastapi.testclient import TestClient
from harness import make_job
from sqlalchemy.orm import Session

from gpudeck.models import JobStatus


def label(client: TestClient, job_id: int, **body: object) -> dict:  # type: ignore[type-arg]
    response = client.patch(f"/api/jobs/{job_id}/labels", json=body)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def ids_of(client: TestClient, **params: object) -> list[int]:
    response = client.get("/api/jobs", params=params)
    assert response.status_code == 200, response.text
    return [j["id"] for j in response.json()["items"]]


def test_tags_and_notes_are_set_shown_and_found(
    client: TestClient, db: Session, devices: str
) -> None:
    base, wide, other = (make_job(db, devices=[i], status=JobStatus.succeeded).id for i in range(3))
    assert client.get(f"/api/jobs/{base}").json()["tags"] == []

    label(client, base, add_tags=["baseline", "lr-sweep"], notes="the run the paper's 4.2 uses")
    shown = label(client, wide, tags=["wide", "lr-sweep"])
    assert shown["tags"] == ["wide", "lr-sweep"] and shown["notes"] == ""
    # add keeps what is there (twice is once), remove takes only what it names
    shown = label(client, wide, add_tags=["wide", "d_sae=4096"], remove_tags=["lr-sweep"])
    assert shown["tags"] == ["wide", "d_sae=4096"]

    job = client.get(f"/api/jobs/{base}").json()
    assert (
        job["tags"] == ["baseline", "lr-sweep"] and job["notes"] == "the run the paper's 4.2 uses"
    )
    assert ids_of(client, tag="baseline") == [base]
    assert ids_of(client, tag="lr-sweep") == [base]  # removed from `wide`
    assert ids_of(client, tag=["baseline", "wide"]) == []  # every tag named
    assert ids_of(client, q="PAPER") == [base]  # notes, any case
    assert ids_of(client, q="d_sae=") == [wide]  # tags; `_` is itself, not any character
    assert ids_of(client, q="d%sae") == []
    assert ids_of(client, id=[other, base]) == [other, base]  # newest first
    assert client.get("/api/jobs", params={"q": "sae"}).json()["total"] == 3  # the kind


def test_the_list_carries_each_jobs_newest_figures(
    client: TestClient, db: Session, devices: str
) -> None:
    """The jobs list's summary columns and the compare page's table read them from the list."""
    job = make_job(db, devices=[0], status=JobStatus.succeeded)
    job.latest_metrics = {"loss": 0.25, "explained_variance": 0.9}
    db.commit()
    (item,) = client.get("/api/jobs", params={"id": job.id}).json()["items"]
    assert item["latest_metrics"] == {"loss": 0.25, "explained_variance": 0.9}


def test_bad_labels_are_refused_naming_the_field(
    client: TestClient, db: Session, devices: str
) -> None:
    job = make_job(db, devices=[0]).id
    cases = [
        ({"tags": ["two words"]}, ["body", "tags", 0]),
        ({"add_tags": [""]}, ["body", "add_tags", 0]),
        ({"notes": "x" * 10_001}, ["body", "notes"]),
        ({"tags": "baseline"}, ["body", "tags"]),
        ({"colour": "red"}, ["body", "colour"]),
    ]
    for body, where in cases:
        response = client.patch(f"/api/jobs/{job}/labels", json=body)
        assert response.status_code == 422, body
        assert response.json()["detail"][0]["loc"] == where, response.text
    too_many = client.patch(
        f"/api/jobs/{job}/labels", json={"add_tags": [f"t{i}" for i in range(20)]}
    )
    assert too_many.status_code == 200
    refused = client.patch(
        f"/api/jobs/{job}/labels", json={"add_tags": [f"u{i}" for i in range(20)]}
    )
    assert refused.status_code == 422 and "at most 32 tags" in refused.text, refused.text
    assert len(client.get(f"/api/jobs/{job}").json()["tags"]) == 20  # nothing half-written
    assert client.patch("/api/jobs/999999/labels", json={}).status_code == 404
    assert client.get("/api/jobs", params={"tag": "a b"}).status_code == 422
    assert client.get("/api/jobs", params={"id": 0}).status_code == 422
