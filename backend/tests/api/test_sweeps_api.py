"""Sweeps through the API: members are ordinary jobs created in one transaction, a bad member
is refused with its index and nothing is created, the scheduler never runs more than
max_parallel members at once, and a cancel reaches every member."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from harness import auth_headers, create_token
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.models import JobStatus
from gpudeck.scheduler.duties import schedule_queue, stop_hopeless_members
from gpudeck.services.jobs import state as job_state

SAE = {"d_in": 16, "d_sae": 64, "batch_size": 64, "steps": 10}


def sweep_body(**extra: object) -> dict[str, object]:
    return {
        "name": "ks",
        "job": {"kind": "sae", "config": SAE, "count": 1},
        "parameters": {"grid": {"k": [2, 4, 8]}, "zip": {"lr": [1e-3, 4e-3]}},
        **extra,
    }


def counts(db: Session) -> tuple[int, int]:
    db.rollback()
    jobs = db.execute(text("SELECT count(*) FROM jobs")).scalar_one()
    sweeps = db.execute(text("SELECT count(*) FROM sweeps")).scalar_one()
    return jobs, sweeps


def test_a_sweep_creates_its_members_as_waiting_jobs_with_their_values(
    client: TestClient, db: Session, devices: str
) -> None:
    created = client.post("/api/sweeps", json=sweep_body(max_parallel=2))
    assert created.status_code == 201, created.text
    sweep = created.json()
    members = sweep["members"]
    assert [m["params"] for m in members] == [
        {"k": 2, "lr": 1e-3}, {"k": 2, "lr": 4e-3}, {"k": 4, "lr": 1e-3},
        {"k": 4, "lr": 4e-3}, {"k": 8, "lr": 1e-3}, {"k": 8, "lr": 4e-3},
    ]  # fmt: skip
    assert [m["name"] for m in members][:2] == ["ks-0", "ks-1"]
    assert sweep["counts"] == {"queued": 6} and sweep["max_parallel"] == 2
    job = client.get(f"/api/jobs/{members[3]['job_id']}").json()
    assert job["config"]["k"] == 4 and job["config"]["lr"] == 4e-3 and job["devices"] == []
    assert sweep["largest_estimate_bytes"] == max(
        client.get(f"/api/jobs/{m['job_id']}").json()["estimate_bytes_per_device"] for m in members
    )
    # The list's row says what the sweep's page says of it, with its counts.
    header = ("id", "name", "owner", "kind", "max_parallel", "created_at")
    row = client.get("/api/sweeps").json()[0]
    swept = row.pop("swept")
    assert row == {**{field: sweep[field] for field in header}, "counts": {"queued": 6}}
    # and what it swept, in its spec's order: the list says it without opening the sweep
    assert [p["text"] for p in swept] == ["k 2, 4, 8", "lr 0.001, 0.004 (zip)"]
    assert swept[0] == {
        "path": "k", "how": "grid", "values": [2, 4, 8], "low": None, "high": None,
        "text": "k 2, 4, 8",
    }  # fmt: skip


def test_a_bad_member_is_refused_with_its_index_and_values_and_nothing_is_created(
    client: TestClient, db: Session, devices: str
) -> None:
    before = counts(db)
    body = sweep_body()
    body["parameters"] = {"grid": {"k": [8, 65]}}  # k 65 > d_sae 64
    refused = client.post("/api/sweeps", json=body)
    assert refused.status_code == 422, refused.text
    (error,) = refused.json()["detail"]
    assert error["loc"][:2] == ["body", "members[1]"], error
    assert "k (65) must be at most d_sae (64)" in error["msg"] and "member 1: k=65" in error["msg"]
    assert counts(db) == before
    too_many = sweep_body()
    too_many["parameters"] = {"grid": {"k": list(range(1, 41)), "seed": list(range(30))}}
    assert client.post("/api/sweeps", json=too_many).status_code == 413
    huge = sweep_body()  # a member that could never fit a device: refused, named
    huge["parameters"] = {"zip": {"d_in": [16, 32_768], "d_sae": [64, 131_072]}}
    never = client.post("/api/sweeps", json=huge)
    assert never.status_code == 422, never.text
    (error,) = never.json()["detail"]
    assert error["loc"][:3] == ["body", "members[1]", "config"], error
    assert "does not fit" in error["msg"] and "member 1: d_in=32768, d_sae=131072" in error["msg"]
    nan = sweep_body()
    nan["parameters"] = {"grid": {"lr": [1e-3, "NaN"]}}
    assert client.post("/api/sweeps", json=nan).status_code == 422
    assert counts(db) == before


def test_a_sweep_over_its_owners_queued_jobs_quota_is_refused_whole(
    client: TestClient, db: Session, devices: str, session_factory: sessionmaker[Session]
) -> None:
    alice = auth_headers(create_token(session_factory, "user", "alice"))
    quota = {"max_devices": 4, "max_queued_jobs": 7}
    assert client.put("/api/users/alice/quota", json=quota).status_code == 200
    before = counts(db)
    body = sweep_body()  # 6 members
    body["parameters"]["grid"]["k"] = [2, 4, 8, 16]  # 8 members: one over the quota
    refused = client.post("/api/sweeps", json=body, headers=alice)
    assert refused.status_code == 409, refused.text
    detail = refused.json()["detail"]
    assert detail["code"] == "quota_exceeded" and "this sweep has 8" in detail["message"]
    assert counts(db) == before
    assert client.post("/api/sweeps", json=sweep_body(), headers=alice).status_code == 201


def test_the_scheduler_starts_at_most_max_parallel_members_and_a_cancel_reaches_all(
    client: TestClient, db: Session, devices: str, scheduler: object
) -> None:
    sweep = client.post("/api/sweeps", json=sweep_body(max_parallel=2)).json()
    ids = [m["job_id"] for m in sweep["members"]]
    started = schedule_queue(scheduler)  # type: ignore[arg-type]
    assert started == ids[:2], started  # 8 devices free: only 2 may run
    waiting = client.get(f"/api/jobs/{ids[2]}").json()["queue"]
    assert waiting["reason_code"] == "sweep"
    assert waiting["reason"] == f"sweep {sweep['id']}: 2 members running (max_parallel 2)"
    assert schedule_queue(scheduler) == []  # type: ignore[arg-type]
    with Session(db.get_bind()) as session:  # past its last step, writing its last checkpoint
        for status in (JobStatus.starting, JobStatus.running):
            job_state.transition(session, ids[0], status)
        session.execute(
            text(
                "UPDATE jobs SET progress_step = 10, progress_total = 10, progress_rate = 5 "
                "WHERE id = :j"
            ),
            {"j": ids[0]},
        )
        session.commit()
    assert schedule_queue(scheduler) == []  # still running: still counted  # type: ignore[arg-type]
    with Session(db.get_bind()) as session:  # the first ends: the next one starts
        job_state.transition(session, ids[0], JobStatus.succeeded)
        session.commit()
    assert schedule_queue(scheduler) == [ids[2]]  # type: ignore[arg-type]

    cancelled = client.post(f"/api/sweeps/{sweep['id']}/cancel").json()
    statuses = {m["job_id"]: m["status"] for m in cancelled["members"]}
    assert all(statuses[i] == "cancelled" for i in ids[3:]), statuses
    jobs = [client.get(f"/api/jobs/{i}").json() for i in ids[1:3]]
    assert all(j["cancel_requested"] or j["status"] == "cancelled" for j in jobs), jobs

    # Resuming the sweep runs its cancelled members (1-5: none had started its ranks) again,
    # from their checkpoints where they have one, each in its place, waiting for its turn.
    resumed = client.post(f"/api/sweeps/{sweep['id']}/resume").json()
    again = {m["index"]: m for m in resumed["members"]}
    assert [again[i]["status"] for i in range(1, 6)] == ["queued"] * 5
    assert all(again[i]["job_id"] not in ids for i in range(1, 6))
    assert [again[i]["params"] for i in range(6)] == [m["params"] for m in sweep["members"]]
    assert again[0]["job_id"] == ids[0] and again[0]["status"] == "succeeded"
    assert len(resumed["members"]) == 6 and resumed["counts"] == {"succeeded": 1, "queued": 5}


def test_early_stopping_asks_a_hopeless_member_to_stop_and_it_ends_stopped_early(
    client: TestClient, db: Session, devices: str, scheduler: object
) -> None:
    body = sweep_body(max_parallel=6)
    body["job"] = {"kind": "sae", "config": {**SAE, "steps": 100}, "count": 1}  # past step 30
    body["early_stop"] = {"rule": "median", "metric": "mse_loss", "grace_steps": 20}
    sweep = client.post("/api/sweeps", json=body).json()
    ids = [m["job_id"] for m in sweep["members"]]
    assert schedule_queue(scheduler) == ids  # type: ignore[arg-type]
    # Members 0-2 ran to the end; of the running 3-5, the last is hopeless.
    with Session(db.get_bind()) as session:
        for rank, job_id in enumerate(ids):
            for status in (JobStatus.starting, JobStatus.running):
                job_state.transition(session, job_id, status)
            if rank < 3:
                job_state.transition(session, job_id, JobStatus.succeeded)
            loss = [1.0, 1.1, 1.2, 1.05, 1.08, 10.0][rank]  # the finished ones' median: 1.1
            rows = [(job_id, step, json.dumps({"mse_loss": loss})) for step in (10, 20, 30)]
            for values in rows:
                session.execute(
                    text("INSERT INTO job_metrics (job_id, step, metrics) VALUES (:j, :s, :m)"),
                    dict(zip(("j", "s", "m"), values, strict=True)),
                )
        session.commit()
    assert stop_hopeless_members(scheduler) == [ids[-1]]  # type: ignore[arg-type]
    assert stop_hopeless_members(scheduler) == []  # asked once  # type: ignore[arg-type]
    hopeless = client.get(f"/api/jobs/{ids[-1]}").json()
    assert hopeless["cancel_requested"] and "worse than the median" in hopeless["error"]
    with Session(db.get_bind()) as session:  # its worker stops it as it stops a cancel
        job_state.transition(session, ids[-1], JobStatus.cancelled)
        session.commit()
    ended = client.get(f"/api/jobs/{ids[-1]}").json()
    assert ended["status"] == "stopped_early"
    index = ended["devices"][0]["index"]  # the device it ran on is free for the next member
    gpus = {g["index"]: g["held_by"] for g in client.get("/api/gpus").json()}
    assert gpus[index] is None, gpus
    assert ended["error_summary"].startswith("stopped early at step 30: its best mse_loss 10")
