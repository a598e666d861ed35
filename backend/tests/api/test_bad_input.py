"""Bad requests get a 4xx naming the field and the reason, and change nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from harness import make_job
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.models import JobStatus

SAE = {"batch_size": 64, "steps": 10}
# 64 GiB of weights per rank, x7 ranks: more memory than any machine running these tests.
HUGE = {**SAE, "batch_size": 70, "d_in": 65536, "d_sae": 131072}


def post(body: Any) -> tuple[str, str, dict[str, Any]]:
    return ("POST", "/api/jobs", {"json": body})


def with_config(**fields: Any) -> tuple[str, str, dict[str, Any]]:
    return post({"kind": "sae", "config": {**SAE, **fields}, "count": 1})


def raw(body: str) -> tuple[str, str, dict[str, Any]]:
    """A body as sent: Python's JSON parser takes NaN, Infinity and 1e400 (= inf) in it."""
    return (
        "POST",
        "/api/jobs",
        {"content": body.encode(), "headers": {"content-type": "application/json"}},
    )


def non_finite(field: str, value: str) -> tuple[str, tuple[str, str, dict[str, Any]], int, str]:
    top = {"kind": "sae", "config": SAE, "count": 1}
    body = json.dumps({k: v for k, v in top.items() if k != field})[:-1]
    return (f"{value} as {field}", raw(f'{body}, "{field}": {value}}}'), 422, field)


NON_FINITE = [
    non_finite(f, v)
    for f in ("count", "priority", "time_limit_s", "nodes")
    for v in ("NaN", "Infinity", "-Infinity", "1e400")
]
NON_FINITE += [
    (
        "NaN in a config float",
        raw('{"kind": "sae", "count": 1, "config": {"batch_size": 64, "lr": NaN}}'),
        422,
        "config.lr",
    ),
    (
        "Infinity deep in a config",
        raw(
            '{"kind": "sae", "count": 1, "config": {"batch_size": 64, "ddp": {"bucket_cap_mb": Infinity}}}'
        ),
        422,
        "config.ddp.bucket_cap_mb",
    ),
]

CASES: list[tuple[str, tuple[str, str, dict[str, Any]], int, str]] = [*NON_FINITE,
    ("unknown device index", post({"kind": "sae", "config": SAE, "devices": [{"index": 20}]}), 422, "devices.0"),
    ("unknown device uuid", post({"kind": "sae", "config": SAE, "devices": [{"uuid": "GPU-nope"}]}), 422, "devices.0"),
    ("device listed twice", post({"kind": "sae", "config": SAE, "devices": [{"index": 1}, {"index": 1}]}), 422, "devices.1"),
    ("uuid and index both", post({"kind": "sae", "config": SAE, "devices": [{"index": 1, "uuid": "x"}]}), 422, "devices.0"),
    ("empty device list", post({"kind": "sae", "config": SAE, "devices": []}), 422, "devices"),
    ("devices and count", post({"kind": "sae", "config": SAE, "devices": [{"index": 0}], "count": 1}), 422, "body"),
    ("neither devices nor count", post({"kind": "sae", "config": SAE}), 422, "body"),
    ("zero count", post({"kind": "sae", "config": SAE, "count": 0}), 422, "count"),
    ("negative count", post({"kind": "sae", "config": SAE, "count": -2}), 422, "count"),
    ("huge count", post({"kind": "sae", "config": SAE, "count": 10**6}), 422, "count"),
    ("more devices than exist", post({"kind": "sae", "config": {**SAE, "batch_size": 72}, "count": 9}), 422, "count"),
    ("count as string", post({"kind": "sae", "config": SAE, "count": "two"}), 422, "count"),
    ("unknown kind", post({"kind": "bash", "config": {}, "count": 1}), 422, "kind"),
    ("kind of wrong type", post({"kind": 7, "config": {}, "count": 1}), 422, "kind"),
    ("unknown top-level field", post({"kind": "sae", "config": SAE, "count": 1, "command": "rm -rf /"}), 422, "command"),
    ("unknown config field", with_config(module="os"), 422, "config.module"),
    ("zero d_in", with_config(d_in=0), 422, "config.d_in"),
    ("negative d_sae", with_config(d_sae=-512), 422, "config.d_sae"),
    ("huge batch", with_config(batch_size=10**9), 422, "config.batch_size"),
    ("steps of wrong type", with_config(steps="many"), 422, "config.steps"),
    ("lr as a list", with_config(lr=[0.1]), 422, "config.lr"),
    ("unsupported dtype", with_config(dtype="float16"), 422, "config.dtype"),
    ("dataset path escapes", with_config(dataset={"type": "file", "path": "../../etc/passwd.npy"}), 422, "config.dataset.path"),
    ("absolute dataset path", with_config(dataset={"type": "file", "path": "/etc/x.npy"}), 422, "config.dataset.path"),
    ("batch not divisible by devices", post({"kind": "sae", "config": {**SAE, "batch_size": 63}, "count": 2}), 422, "config.batch_size"),
    ("name with a newline", post({"kind": "sae", "config": SAE, "count": 1, "name": "a\nb"}), 422, "name"),
    ("body is a list", post([{"kind": "sae"}]), 422, "body"),
    ("malformed JSON", ("POST", "/api/jobs", {"content": b'{"kind": "sae",', "headers": {"content-type": "application/json"}}), 422, "body"),
    ("oversized body", ("POST", "/api/jobs", {"content": b"{" + b" " * (2 * 1024 * 1024) + b"}", "headers": {"content-type": "application/json"}}), 413, "body"),
    ("unknown status filter", ("GET", "/api/jobs", {"params": {"status": "sleeping"}}), 422, "status.0"),
    ("zero page size", ("GET", "/api/jobs", {"params": {"limit": 0}}), 422, "limit"),
    ("job id not a number", ("GET", "/api/jobs/abc", {}), 422, "job_id"),
    ("cancel unknown job", ("POST", "/api/jobs/999999/cancel", {}), 404, "job_id"),
    # Strict types: a bool is not a number, a string is not an int or a bool.
    ("force as a string", post({"kind": "sae", "config": SAE, "count": 1, "force": "yes"}), 422, "force"),
    ("count as a bool", post({"kind": "sae", "config": SAE, "count": True}), 422, "count"),
    ("device index as a bool", post({"kind": "sae", "config": SAE, "devices": [{"index": True}]}), 422, "devices.0.index"),
    ("steps as a bool", with_config(steps=True), 422, "config.steps"),
    ("d_in as a string", with_config(d_in="16"), 422, "config.d_in"),
    ("lr as a bool", with_config(lr=True), 422, "config.lr"),
    ("bool option as a string", with_config(ddp={"broadcast_buffers": "false"}), 422, "config.ddp.broadcast_buffers"),
    ("estimate world size as a bool", ("POST", "/api/estimate", {"json": {"kind": "sae", "world_size": True}}), 422, "world_size"),
    # What Postgres, the dataset directory or the machine would refuse later.
    ("NUL in a config string", with_config(dataset={"type": "file", "path": "a.npy", "tensor_name": "a\u0000b"}), 422, "config.dataset.tensor_name"),
    ("NUL in a config key", post({"kind": "sae", "config": {**SAE, "x\u0000": 1}, "count": 1}), 422, "config"),
    ("dataset file missing", with_config(dataset={"type": "file", "path": "missing.npy"}), 422, "config.dataset.path"),
    ("CPU ranks past host memory, forced", post({"kind": "sae", "config": HUGE, "count": 7, "force": True}), 409, "count"),
    ("CPU ranks past host memory, devices", post({"kind": "sae", "config": HUGE, "devices": [{"index": i} for i in range(1, 8)], "force": True}), 409, "devices"),
    ("chunked oversized body", ("POST", "/api/jobs", {"content": iter([b"{" + b" " * (1024 * 1024), b" " * (1024 * 1024) + b"}"]), "headers": {"content-type": "application/json"}}), 413, "body"),
]  # fmt: skip


def named_fields(body: dict[str, Any]) -> set[str]:
    """Every field a response names: FastAPI-style `loc` lists, or a domain error's `field`."""
    detail = body["detail"]
    if isinstance(detail, dict):
        return {detail["field"]} if detail.get("field") else set()
    names = set()
    for error in detail:
        assert error["msg"], error  # the reason, not just a code
        parts = [str(p) for p in error["loc"]]
        if error["type"] == "json_invalid":  # loc is ["body", <character offset>]
            parts = ["body"]
        # loc starts with where the field lives (body, query, path); a bare ["body"] is the body.
        if len(parts) > 1 and parts[0] in ("body", "query", "path"):
            parts = parts[1:]
        names.add(".".join(parts))
    return names


def snapshot(db: Session) -> list[Any]:
    db.rollback()
    return [
        db.execute(text(f"SELECT * FROM {table} ORDER BY 1")).all()
        for table in ("jobs", "allocations", "job_metrics", "checkpoints", "devices")
    ]


@pytest.mark.parametrize(("case", "request_", "status", "field"), CASES, ids=[c[0] for c in CASES])
def test_bad_request_is_refused_and_changes_nothing(
    client: TestClient,
    db: Session,
    devices: str,
    case: str,
    request_: tuple[str, str, dict[str, Any]],
    status: int,
    field: str,
) -> None:
    make_job(db, devices=[0])  # some state for a bad request to disturb
    before = snapshot(db)
    method, path, kwargs = request_
    response = client.request(method, path, **kwargs)
    assert response.status_code == status, response.text
    names = named_fields(response.json())
    assert field in names, (field, names)
    assert snapshot(db) == before


def test_cancel_finished_job_is_a_conflict_naming_the_status(
    client: TestClient, db: Session, devices: str
) -> None:
    job = make_job(db, devices=[2], status=JobStatus.succeeded)
    before = snapshot(db)
    response = client.post(f"/api/jobs/{job.id}/cancel")
    assert response.status_code == 409
    assert response.json()["detail"]["field"] == "status"
    assert "succeeded" in response.json()["detail"]["message"]
    assert snapshot(db) == before


def test_busy_device_names_the_device_and_its_holder(
    client: TestClient, db: Session, devices: str
) -> None:
    holder = make_job(db, devices=[4, 5])
    before = snapshot(db)
    response = client.post(
        "/api/jobs",
        json={
            "kind": "sae",
            "config": SAE,
            "devices": [{"index": 3}, {"index": 5}],
            "queue": False,
        },
    )
    assert response.status_code == 409
    detail = response.json()["detail"]
    assert detail["field"] == "devices" and detail["code"] == "gpu_busy"
    assert [(b["index"], b["held_by_job_id"]) for b in detail["busy"]] == [(5, holder.id)]
    assert snapshot(db) == before
