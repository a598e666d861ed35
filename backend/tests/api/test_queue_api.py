"""The queue through the API: a submit onto busy devices waits (holding nothing) and says why;
hold, release, priority and quotas follow the owner/admin rules; bad input is a 4xx naming the
field and changes nothing."""

from __future__ import annotations

from datetime import datetime, timedelta

import redis
from fastapi.testclient import TestClient
from harness import auth_headers, create_token, make_job, statements_run
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.services.queue import summary as queue_summary

SAE = {"steps": 10, "batch_size": 64}


def _submit(client: TestClient, **body: object) -> dict[str, object]:
    """Submit, then read it back as GET shows it. With no scheduler's summary in Redis, the
    submit answer's place comes from the same pass as GET's."""
    response = client.post("/api/jobs", json={"kind": "sae", "config": SAE, **body})
    assert response.status_code == 201, response.text
    job: dict[str, object] = client.get(f"/api/jobs/{response.json()['id']}").json()
    answered, read = response.json()["queue"], job["queue"]
    if read is None:
        assert answered is None
    else:  # the expected start of a job that never started moves with the clock
        assert {k: answered[k] for k in ("position", "reason_code", "reason")} == {
            k: read[k]
            for k in ("position", "reason_code", "reason")  # type: ignore[index]
        }
    return job


def _live_allocations(db: Session, job_id: object) -> int:
    db.rollback()
    query = text("SELECT count(*) FROM allocations WHERE job_id = :j AND released_at IS NULL")
    return int(db.execute(query, {"j": job_id}).scalar_one())


def test_busy_devices_queue_with_a_reason_and_no_allocation(
    client: TestClient, db: Session, devices: str
) -> None:
    holder = make_job(db, devices=[1])
    job = _submit(client, devices=[{"index": 1}], time_limit_s=60)
    assert job["status"] == "queued" and job["devices"] == []
    assert _live_allocations(db, job["id"]) == 0
    queue = job["queue"]
    assert isinstance(queue, dict)
    assert queue["position"] == 1 and queue["reason_code"] == "devices_busy"
    assert f"{devices}/1 held by job {holder.id}" in queue["reason"]
    # queue: false keeps today's immediate answer.
    refused = client.post(
        "/api/jobs",
        json={"kind": "sae", "config": SAE, "devices": [{"index": 1}], "queue": False},
    )
    assert refused.status_code == 409 and refused.json()["detail"]["code"] == "gpu_busy"

    listed = client.get("/api/queue").json()
    assert listed["total"] == 1 and listed["items"][0]["id"] == job["id"]
    assert listed["items"][0]["queue"]["position"] == 1


def test_the_submit_answer_places_a_waiting_job_from_the_schedulers_last_pass(
    client: TestClient, db: Session, devices: str, redis_client: redis.Redis
) -> None:
    holder = make_job(db, devices=[0, 1])
    started = "UPDATE jobs SET status = 'running', started_at = now() WHERE id = :j "
    ends = db.execute(
        text(started + "RETURNING started_at + time_limit_s * interval '1 second'"),
        {"j": holder.id},
    ).scalar_one()
    db.commit()
    _submit(client, devices=[{"index": 1}], time_limit_s=600)
    with Session(db.get_bind()) as session:
        _, summary = queue_summary.compute(session, None, half_life_s=86400)
    queue_summary.publish(redis_client, summary)

    second = client.post(
        "/api/jobs", json={"kind": "sae", "config": SAE, "devices": [{"index": 1}]}
    ).json()
    place = second["queue"]
    assert place["position"] == 2 and place["reason_code"] == "devices_busy"
    assert place["reason"] == f"devices busy: needs 1 on {devices}, 0 free after the jobs ahead"
    # After the holder's limit, then the first waiting job's 600 s.
    assert datetime.fromisoformat(place["expected_start_at"]) == ends + timedelta(seconds=600)
    held = client.post(
        "/api/jobs", json={"kind": "sae", "config": SAE, "count": 1, "hold": True}
    ).json()
    # behind the first waiting job (the pass's) and `second`, submitted since the pass
    assert held["queue"]["reason_code"] == "held" and held["queue"]["position"] == 3


def test_a_job_behind_a_waiting_one_waits_too(
    client: TestClient, db: Session, devices: str
) -> None:
    """Free devices do not let a newcomer overtake a job already waiting on the node."""
    make_job(db, count=7)
    big = _submit(client, count=4, config={**SAE, "batch_size": 256})
    small = _submit(client, count=1, time_limit_s=2 * 86400)  # would end after big's start
    assert big["queue"] and small["queue"]
    assert small["devices"] == [] and _live_allocations(db, small["id"]) == 0
    queue = client.get("/api/queue").json()["items"]
    assert [j["id"] for j in queue] == [big["id"], small["id"]]
    assert queue[1]["queue"]["reason_code"] == "priority"


def test_hold_release_priority_and_their_rules(
    client: TestClient, db: Session, devices: str, session_factory: sessionmaker[Session]
) -> None:
    make_job(db, devices=[0])
    job = _submit(client, devices=[{"index": 0}])
    held = client.post(f"/api/jobs/{job['id']}/hold").json()
    assert held["held"] is True and held["queue"]["reason_code"] == "held"
    released = client.post(f"/api/jobs/{job['id']}/release").json()
    assert released["held"] is False and released["queue"]["reason_code"] == "devices_busy"

    alice = auth_headers(create_token(session_factory, "user", "alice"))
    mine = client.post(
        "/api/jobs",
        json={"kind": "sae", "config": SAE, "devices": [{"index": 0}]},
        headers=alice,
    ).json()
    raise_it = client.patch(f"/api/jobs/{mine['id']}", json={"priority": 5}, headers=alice)
    assert raise_it.status_code == 403 and raise_it.json()["detail"]["field"] == "priority"
    lower = client.patch(f"/api/jobs/{mine['id']}", json={"priority": -5}, headers=alice)
    assert lower.status_code == 200 and lower.json()["priority"] == -5
    others = client.post(f"/api/jobs/{job['id']}/hold", headers=alice)
    assert others.status_code == 403
    too_high = client.post(
        "/api/jobs", json={"kind": "sae", "config": SAE, "count": 1, "priority": 1}, headers=alice
    )
    assert too_high.status_code == 403 and too_high.json()["detail"]["field"] == "priority"
    assert client.patch(f"/api/jobs/{mine['id']}", json={"priority": 50}).status_code == 200

    running = make_job(db, devices=[3])
    not_queued = client.post(f"/api/jobs/{running.id}/hold")
    assert not_queued.status_code == 409


def test_quotas_are_admin_only_and_enforced(
    client: TestClient, db: Session, devices: str, session_factory: sessionmaker[Session]
) -> None:
    alice = auth_headers(create_token(session_factory, "user", "alice"))
    assert client.get("/api/users/alice/quota").json()["max_devices"] is None
    assert client.put("/api/users/alice/quota", json={"max_devices": 1}).status_code == 422
    forbidden = client.put(
        "/api/users/alice/quota", json={"max_devices": 1, "max_queued_jobs": 1}, headers=alice
    )
    assert forbidden.status_code == 403
    missing = client.put("/api/users/nobody/quota", json={"max_devices": 1, "max_queued_jobs": 1})
    assert missing.status_code == 404
    quota = {"max_devices": 1, "max_queued_jobs": 1}
    assert client.put("/api/users/alice/quota", json=quota).status_code == 200

    body = {"kind": "sae", "config": {**SAE, "batch_size": 128}, "count": 2}
    first = client.post("/api/jobs", json=body, headers=alice).json()
    first = client.get(f"/api/jobs/{first['id']}").json()
    assert first["devices"] == [] and first["queue"]["reason_code"] == "quota"
    second = client.post("/api/jobs", json=body, headers=alice)
    assert second.status_code == 409 and second.json()["detail"]["field"] == "queue"
    # queue: false starts now or never: over the device quota it is refused, not started.
    assert client.post(f"/api/jobs/{first['id']}/cancel").status_code == 200
    now = client.post("/api/jobs", json={**body, "queue": False}, headers=alice)
    assert now.status_code == 409, now.text
    assert now.json()["detail"]["code"] == "quota_exceeded"
    assert "may hold 1 devices" in now.json()["detail"]["message"]


def test_bad_scheduling_input_names_the_field_and_changes_nothing(
    client: TestClient, db: Session, devices: str
) -> None:
    before = db.execute(text("SELECT count(*) FROM jobs")).scalar_one()
    cases = [
        ({"depends_on": [999999]}, "depends_on"),
        ({"depends_on": ["1"]}, "depends_on"),
        ({"priority": 101}, "priority"),
        ({"priority": True}, "priority"),
        ({"time_limit_s": 0}, "time_limit_s"),
        ({"time_limit_s": 10**9}, "time_limit_s"),
        ({"queue": False, "hold": True}, "hold"),
        ({"queue": "no"}, "queue"),
    ]
    for extra, field in cases:
        response = client.post(
            "/api/jobs", json={"kind": "sae", "config": SAE, "count": 1, **extra}
        )
        assert response.status_code == 422, (extra, response.text)
        assert field in str(response.json()["detail"]), (extra, response.text)
    job = make_job(db, devices=[2])
    for body in ({"priority": "1"}, {"priority": 1000}, {}, {"held": True}):
        response = client.patch(f"/api/jobs/{job.id}", json=body)
        assert response.status_code == 422, (body, response.text)
    db.rollback()
    assert db.execute(text("SELECT count(*) FROM jobs")).scalar_one() == before + 1


def test_a_queued_submit_costs_ten_statements(
    client: TestClient, db: Session, devices: str, redis_client: redis.Redis
) -> None:
    """The submit rate (bench/scheduler.py submit) is CPU spent per statement: the token, the
    named devices, the node's facts, the quota, "anyone waiting", the insert, the wake-up, the
    audit row, the devices held now (the summary the answer reads may be seconds old: a
    job placed since must not be missed) and the jobs submitted since the summary's pass (ahead
    of it, unseen by the pass: an index range on status and created_at). A request naming no
    node adds one: the node there is."""
    make_job(db, devices=[0])
    _submit(client, devices=[{"index": 0}])  # one waits: the next cannot start at once
    with Session(db.get_bind()) as session:
        _, summary = queue_summary.compute(session, None, half_life_s=86400)
    queue_summary.publish(redis_client, summary)  # as the scheduler leaves it
    engine = client.app.state.engine  # type: ignore[attr-defined]
    with statements_run(engine) as statements:
        response = client.post(
            "/api/jobs",
            json={"kind": "sae", "config": SAE, "devices": [{"index": 0, "node": devices}]},
        )
    assert response.status_code == 201 and response.json()["queue"]["position"] == 2
    assert len(statements) == 10, "\n".join(statements)


def test_the_schedulers_pass_only_decides_and_the_views_explain(
    client: TestClient, db: Session, devices: str
) -> None:
    """The scheduler's frequent passes skip explaining jobs that cannot start (a long queue
    is read and decided in a fraction of the time); the queue view and the submit summary
    explain every waiting job. Both decide the same."""
    make_job(db, devices=[0])
    first = _submit(client, devices=[{"index": 0}])
    second = _submit(client, devices=[{"index": 0}])
    with Session(db.get_bind()) as session:
        decided, _ = queue_summary.compute(session, None, half_life_s=86400, explain=False)
        explained, _ = queue_summary.compute(session, None, half_life_s=86400, explain=True)
    assert decided.starts == explained.starts == []
    assert set(explained.infos) == {first["id"], second["id"]}
    assert set(decided.infos) == {first["id"]}  # the first blocked job holds the reservation


def test_the_expected_start_uses_a_running_jobs_measured_rate_not_its_whole_limit(
    client: TestClient, db: Session, devices: str
) -> None:
    """A job at 5,070 of 6,000 steps, at 15 steps a second, frees its device in about a
    minute: the job waiting for it is told so (before: its whole 24 h limit, "in ~24 h").
    Without a measured rate the limit is all there is, and the answer says it is a bound."""
    holder = make_job(db, devices=[0])
    db.execute(
        text(
            "UPDATE jobs SET status = 'running', started_at = now() - interval '338 s', "
            "time_limit_s = 86400, progress_step = 5070, progress_total = 6000, "
            "progress_rate = 15 WHERE id = :j"
        ),
        {"j": holder.id},
    )
    db.commit()
    job = _submit(client, devices=[{"index": 0}])
    place = job["queue"]
    assert isinstance(place, dict)
    expected = datetime.fromisoformat(place["expected_start_at"])
    now = db.execute(text("SELECT now()")).scalar_one()
    assert abs((expected - now).total_seconds() - 62) < 10, expected - now
    assert place["expected_start_from_time_limits"] is False

    db.execute(text("UPDATE jobs SET progress_rate = NULL WHERE id = :j"), {"j": holder.id})
    db.commit()
    place = client.get(f"/api/jobs/{job['id']}").json()["queue"]
    expected = datetime.fromisoformat(place["expected_start_at"])
    assert abs((expected - now).total_seconds() - (86400 - 338)) < 10, expected - now
    assert place["expected_start_from_time_limits"] is True


def test_the_submit_answer_names_a_device_taken_since_the_schedulers_last_pass(
    client: TestClient, db: Session, devices: str, redis_client: redis.Redis
) -> None:
    """The summary's pass saw devices 0 and 1 free; a job took them since. A job submitted on
    device 1 is told who holds it, as a GET a moment later says (before: "priority: 0 jobs
    ahead", expected start now)."""
    with Session(db.get_bind()) as session:
        _, summary = queue_summary.compute(session, None, half_life_s=86400)
    queue_summary.publish(redis_client, summary)
    taker = client.post(
        "/api/jobs", json={"kind": "sae", "config": SAE, "devices": [{"index": 0}, {"index": 1}]}
    ).json()
    assert taker["status"] != "queued" or taker["devices"], taker
    second = client.post(
        "/api/jobs", json={"kind": "sae", "config": SAE, "devices": [{"index": 1}]}
    ).json()
    place = second["queue"]
    assert place["reason"] == f"devices busy: {devices}/1 held by job {taker['id']}", place
    assert place["reason_code"] == "devices_busy"
    assert place["expected_start_from_time_limits"] is True
    read = client.get(f"/api/jobs/{second['id']}").json()["queue"]
    assert f"{devices}/1 held by job {taker['id']}" in read["reason"]
