"""A sweep read as a researcher reads it: a metric against each swept parameter (the best member,
a log axis for an lr drawn log-uniform, the best at the top of the range called out), and a
running sweep's waiting members told when they start from the running member's rate."""

from __future__ import annotations

from datetime import datetime

from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.models import JobStatus
from gpudeck.scheduler.duties import schedule_queue
from gpudeck.services.jobs import events as job_events
from gpudeck.services.jobs import state as job_state

S = JobStatus
SAE = {"d_in": 16, "d_sae": 64, "batch_size": 64, "steps": 100}


def _run(session: Session, job_id: int, metrics: dict[str, float], end: JobStatus | None) -> None:
    for target in (S.starting, S.running):
        job_state.transition(session, job_id, target)
    job_events.record_metrics(session, job_id, [(100, metrics)])
    if end is not None:
        job_state.transition(session, job_id, end)


def test_an_lr_sweep_names_its_best_member_and_says_the_best_lr_is_the_largest_searched(
    client: TestClient, db: Session, devices: str
) -> None:
    lr = {"distribution": "log_uniform", "low": 1e-4, "high": 1e-1}
    body = {
        "job": {"kind": "sae", "config": SAE, "count": 1},
        "parameters": {"random": {"lr": lr}, "count": 5, "seed": 3},
    }
    sweep = client.post("/api/sweeps", json=body).json()
    members = sweep["members"]
    with Session(db.get_bind()) as session:
        for m in members:  # explained variance rises with lr: the best is the largest lr
            figures = {"explained_variance": m["params"]["lr"] * 5, "l0": 8.0}
            _run(session, m["job_id"], figures, S.succeeded)
        session.commit()
    answer = client.get(f"/api/sweeps/{sweep['id']}/analysis").json()
    largest = max(members, key=lambda m: m["params"]["lr"])
    assert (answer["metric"], answer["better"], answer["measured"]) == (
        "explained_variance", "max", 5
    )  # fmt: skip
    assert answer["best_job_id"] == largest["job_id"]
    (effect,) = answer["parameters"]
    assert effect["path"] == "lr" and effect["log_axis"] and effect["edge"] == "top"
    assert (effect["low"], effect["high"]) == (1e-4, 1e-1)
    assert effect["rank_correlation"] == 1.0
    assert effect["note"].startswith("lr best at the top of the range searched (")
    assert effect["note"].endswith("of 0.0001 to 0.1): widen it upward")
    # L0 is the same for every member: no trend, and a lower-is-better metric by its name
    flat = client.get(f"/api/sweeps/{sweep['id']}/analysis", params={"metric": "l0"}).json()
    assert flat["better"] == "min" and flat["parameters"][0]["rank_correlation"] is None


def test_a_metric_no_member_reports_is_a_422_naming_the_field(
    client: TestClient, db: Session, devices: str
) -> None:
    body = {"job": {"kind": "sae", "config": SAE, "count": 1}, "parameters": {"grid": {"k": [8]}}}
    sweep = client.post("/api/sweeps", json=body).json()
    none_yet = client.get(f"/api/sweeps/{sweep['id']}/analysis")
    assert none_yet.status_code == 422 and none_yet.json()["detail"][0]["loc"][-1] == "metric"
    unknown = client.get(f"/api/sweeps/{sweep['id']}/analysis", params={"metric": "nope"})
    assert unknown.status_code == 422 and "'nope'" in str(unknown.json()["detail"])
    wrong = client.get(f"/api/sweeps/{sweep['id']}/analysis", params={"better": "up"})
    assert wrong.status_code == 422
    assert client.get("/api/sweeps/999999/analysis").status_code == 404


def test_a_running_sweeps_waiting_members_are_told_when_they_start(
    client: TestClient, db: Session, devices: str, scheduler: object
) -> None:
    """max_parallel 1: the running member has 900 of its 1,000 steps left at 10 a second, so
    the next member starts ~90 s from now and the one after runs 100 s later (1,000 steps at
    the running member's rate)."""
    body = {
        "job": {"kind": "sae", "config": SAE, "count": 1, "time_limit_s": 3600},
        "parameters": {"grid": {"k": [4, 8, 16]}},
        "max_parallel": 1,
    }
    sweep = client.post("/api/sweeps", json=body).json()
    first = sweep["members"][0]["job_id"]
    assert schedule_queue(scheduler) == [first]  # type: ignore[arg-type]
    with Session(db.get_bind()) as session:
        _run(session, first, {"explained_variance": 0.5}, None)
        session.execute(
            text(
                "UPDATE jobs SET progress_step = 100, progress_total = 1000, progress_rate = 10"
                " WHERE id = :j"
            ),
            {"j": first},
        )
        session.commit()
    members = client.get(f"/api/sweeps/{sweep['id']}").json()["members"]
    assert [m["status"] for m in members] == ["running", "queued", "queued"]
    assert members[0]["queue"] is None
    waits = [m["queue"] for m in members[1:]]
    assert [w["reason_code"] for w in waits] == ["sweep", "sweep"]
    assert [w["position"] for w in waits] == [1, 2]
    starts = [datetime.fromisoformat(w["expected_start_at"]) for w in waits]
    assert abs((starts[1] - starts[0]).total_seconds() - 100) < 1
    assert not any(w["expected_start_from_time_limits"] for w in waits)


def test_the_draws_a_sweep_would_make_are_previewed_and_are_the_sweeps_own(
    client: TestClient, db: Session, devices: str
) -> None:
    parameters = {
        "random": {"lr": {"distribution": "log_uniform", "low": 1e-4, "high": 1e-2}},
        "grid": {"k": [8, 16]},
        "count": 3,
        "seed": 7,
    }
    preview = client.post("/api/sweeps/draws", json=parameters)
    assert preview.status_code == 200
    assert preview.json()["count"] == 6
    body = {"job": {"kind": "sae", "config": SAE, "count": 1}, "parameters": parameters}
    sweep = client.post("/api/sweeps", json=body).json()
    assert preview.json()["members"] == [m["params"] for m in sweep["members"]]
    assert all(1e-4 <= m["lr"] <= 1e-2 for m in preview.json()["members"])
    many = {"grid": {"k": list(range(40)), "lr": list(range(30))}}
    over = client.post("/api/sweeps/draws", json=many)
    assert over.status_code == 413 and over.json()["detail"]["field"] == "parameters"
    bad = client.post(
        "/api/sweeps/draws",
        json={"random": {"lr": {"distribution": "log_uniform", "low": 0, "high": 1}}, "count": 2},
    )
    assert bad.status_code == 422 and "low above 0" in str(bad.json())
