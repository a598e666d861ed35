"""POST /api/gpus/recommend and sharing a device by memory, over real Postgres: a job that asks
to share is placed by the reservation room (best fit, its owner against the node's policy),
and a whole-device recommendation says when the job could start now by sharing instead."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from harness import TEST_NODE, auth_headers, create_token, make_job, register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.schemas.jobs import DeviceRef, JobCreate
from gpudeck.services.submit import submission

GiB = 1024**3
MiB = 1024**2
CONTEXT = 500 * MiB  # the default context reserve
# 8 GiB devices: usable when idle 8 GiB - 512 MiB; ada's 3 GiB share leaves 4.0 GiB on device 0.
ROOM_0 = 8 * GiB - 512 * MiB - 3 * GiB - CONTEXT


def share_on(db: Session, *, across_users: bool = False) -> None:
    db.execute(
        text("UPDATE nodes SET share_memory = true, share_across_users = :a WHERE name = :n"),
        {"a": across_users, "n": TEST_NODE},
    )
    db.commit()


def shared_job(db: Session, memory_bytes: int, index: int) -> int:
    """ada's script job sharing device `index` (the submit pipeline's own reservation)."""
    config = {"entrypoint": "train.py", "memory_per_device_bytes": memory_bytes}
    body = JobCreate(kind="script", name="small", config=config, share="memory",
                     devices=[DeviceRef(index=index)])  # fmt: skip
    job = submission.create_job(db, body, owner="ada")
    db.commit()
    return job.id


def ask(client: TestClient, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    response = client.post("/api/gpus/recommend", json={"count": 1, **body}, headers=headers)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def reasons(result: dict[str, Any]) -> dict[int, tuple[str, str]]:
    return {e["index"]: (e["reason"], e["message"]) for e in result["excluded"]}


def test_a_share_goes_where_its_reservation_fits_tightest_first(
    client: TestClient, db: Session, session_factory: sessionmaker[Session]
) -> None:
    register_devices(db, "3x8GiB")
    share_on(db)
    shared_job(db, 3 * GiB, index=0)
    whole = make_job(db, devices=[1])
    ada = auth_headers(create_token(session_factory, "user", "ada"))

    result = ask(client, ada, bytes_per_device=2 * GiB, share="memory")
    assert result["enough"] and [d["index"] for d in result["devices"]] == [0]  # best fit
    assert result["devices"][0]["reservation_room_bytes"] == ROOM_0
    assert result["share_bytes_per_device"] == 2 * GiB + CONTEXT
    assert reasons(result) == {1: ("held_by_job", f"held whole by job {whole.id}")}

    too_big = ask(client, ada, bytes_per_device=5 * GiB, share="memory")
    assert [d["index"] for d in too_big["devices"]] == [2]
    assert reasons(too_big)[0] == (
        "insufficient_memory",
        f"device {TEST_NODE}/0: 4.0 GiB free of reservations, needs 5.5 GiB",
    )
    # two devices on the one node: the idle one and ada's shared one
    two = ask(client, ada, bytes_per_device=2 * GiB, share="memory", count=2)
    assert two["enough"] and [d["index"] for d in two["devices"]] == [0, 2]
    assert set(reasons(two)) == {1}  # only the device held whole is left out


def test_another_users_share_is_closed_unless_the_node_shares_across_users(
    client: TestClient, db: Session, session_factory: sessionmaker[Session]
) -> None:
    register_devices(db, "2x8GiB")
    share_on(db)
    job = shared_job(db, 3 * GiB, index=0)
    bob = auth_headers(create_token(session_factory, "user", "bob"))
    result = ask(client, bob, bytes_per_device=GiB, share="memory")
    assert [d["index"] for d in result["devices"]] == [1]
    assert reasons(result)[0][0] == "sharing_not_allowed"
    assert f"shared by job {job} of another user" in reasons(result)[0][1]

    share_on(db, across_users=True)
    assert [
        d["index"] for d in ask(client, bob, bytes_per_device=GiB, share="memory")["devices"]
    ] == [0]


def test_a_whole_device_request_says_when_sharing_would_start_it_now(
    client: TestClient, db: Session, session_factory: sessionmaker[Session]
) -> None:
    register_devices(db, "2x8GiB")
    share_on(db)
    job = shared_job(db, 3 * GiB, index=0)
    whole = make_job(db, devices=[1])
    ada = auth_headers(create_token(session_factory, "user", "ada"))

    result = ask(client, ada, bytes_per_device=2 * GiB)
    assert not result["enough"] and result["devices"] == []  # no device free whole: it waits
    assert reasons(result) == {
        0: ("shared", f"shared by job {job}; a sharing job could reserve 4.0 GiB here"),
        1: ("held_by_job", f"held by job {whole.id}"),
    }
    assert result["could_share"] and [d["index"] for d in result["share_devices"]] == [0]
    assert result["share_message"] == (
        f"could start now by sharing instead of waiting: {TEST_NODE}/0 "
        "(4.0 GiB free of reservations)"
    )

    too_big = ask(client, ada, bytes_per_device=5 * GiB)
    assert not too_big["could_share"] and too_big["share_message"] is None
    assert reasons(too_big)[0] == (
        "shared",
        f"shared by job {job}; 4.0 GiB free of reservations, a share needs 5.5 GiB",
    )


def test_share_other_than_memory_is_refused_naming_the_field(
    client: TestClient, db: Session
) -> None:
    register_devices(db, "1x8GiB")
    for share in ("compute", "", 1):
        response = client.post(
            "/api/gpus/recommend", json={"bytes_per_device": GiB, "count": 1, "share": share}
        )
        assert response.status_code == 422, response.text
        assert [e["loc"] for e in response.json()["detail"]] == [["body", "share"]]
