"""Submitting script jobs: who may, and what is refused before anything starts (a 4xx naming
the field, no job row, no device held)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from harness import auth_headers, create_token, register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

MIB = 1024**2


@pytest.fixture
def api(client: TestClient, db: Session, script_env: dict[str, str]) -> TestClient:
    register_devices(db)
    return client


def body(**config: Any) -> dict[str, Any]:
    base = {"entrypoint": "ddp_train.py", "memory_per_device_bytes": 256 * MIB}
    return {"kind": "script", "config": {**base, **config}, "count": 2}


def job_count(db: Session) -> int:
    db.rollback()
    return int(db.scalar(text("SELECT count(*) FROM jobs")) or 0)


def live_allocations(db: Session) -> int:
    db.rollback()
    return int(db.scalar(text("SELECT count(*) FROM allocations WHERE released_at IS NULL")) or 0)


def refused(api: TestClient, db: Session, payload: dict[str, Any], status: int = 422) -> str:
    """Posts, checks nothing was created, returns the field the answer names."""
    before = job_count(db)
    answer = api.post("/api/jobs", json=payload)
    assert answer.status_code == status, answer.text
    assert job_count(db) == before and live_allocations(db) == 0
    detail = answer.json()["detail"]
    if status == 422:
        return ".".join(str(p) for p in detail[0]["loc"][1:])
    return str(detail["field"])


def test_run_code_is_a_permission_an_admin_grants(
    api: TestClient, db: Session, session_factory: sessionmaker[Session]
) -> None:
    alice = auth_headers(create_token(session_factory, "user", name="alice"))
    before = job_count(db)
    answer = api.post("/api/jobs", json=body(), headers=alice)
    assert answer.status_code == 403
    assert answer.json()["detail"]["field"] == "kind"
    assert "run_code" in answer.json()["detail"]["message"]
    assert job_count(db) == before and live_allocations(db) == 0

    # Only an admin grants it.
    assert api.patch("/api/users/alice", json={"run_code": True}, headers=alice).status_code == 403
    granted = api.patch("/api/users/alice", json={"run_code": True})
    assert granted.status_code == 200 and granted.json()["run_code"] is True
    created = api.post("/api/jobs", json=body(), headers=alice)
    assert created.status_code == 201, created.text
    assert created.json()["owner"] == "alice"
    assert api.post(f"/api/jobs/{created.json()['id']}/cancel").status_code == 200

    assert api.patch("/api/users/alice", json={"run_code": False}).json()["run_code"] is False
    assert api.post("/api/jobs", json=body(), headers=alice).status_code == 403
    job_id = created.json()["id"]
    assert api.post(f"/api/jobs/{job_id}/resume", headers=alice).status_code == 403
    assert api.patch("/api/users/nobody", json={"run_code": True}).status_code == 404
    assert api.patch("/api/users/alice", json={"run_code": 1}).status_code == 422


def test_entrypoints_outside_the_code_roots_are_refused(
    api: TestClient, db: Session, code_root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("print('not yours')\n")
    (code_root / "escape.py").symlink_to(outside)
    (code_root / "notes.txt").write_text("")
    for entrypoint, reason in [
        (str(outside), "outside the code roots"),
        ("../outside.py", "'..'"),
        ("sub/../../outside.py", "'..'"),
        ("escape.py", "outside the code roots"),
        ("missing.py", "no such file"),
        ("notes.txt", ".py"),
    ]:
        answer = api.post("/api/jobs", json=body(entrypoint=entrypoint))
        assert answer.status_code == 422, (entrypoint, answer.text)
        assert answer.json()["detail"][0]["loc"][1:] == ["config", "entrypoint"], entrypoint
        assert reason in answer.json()["detail"][0]["msg"], (entrypoint, answer.text)
    assert job_count(db) == 0 and live_allocations(db) == 0


def test_modules_run_only_from_the_code_roots(
    api: TestClient, db: Session, code_root: Path, tmp_path: Path
) -> None:
    """`-m timeit` and `-m cProfile /outside/evil.py` ran any code: the interpreter's own
    modules are not under the code roots, so they are refused, as is a symlink leaving them."""
    (tmp_path / "evil.py").write_text("print('not yours')\n")
    (code_root / "escape.py").symlink_to(tmp_path / "evil.py")
    for module in ["timeit", "cProfile", "runpy", "escape", "missing.mod"]:
        config = {"entrypoint": None, "module": module, "args": ["-n", "1", "pass"]}
        answer = api.post("/api/jobs", json=body(**config))
        assert answer.status_code == 422, (module, answer.text)
        assert answer.json()["detail"][0]["loc"][1:] == ["config", "module"], module
        assert "under the code roots" in answer.json()["detail"][0]["msg"], module
    assert job_count(db) == 0 and live_allocations(db) == 0
    (code_root / "tools").mkdir()
    (code_root / "tools" / "__init__.py").write_text("")
    (code_root / "tools" / "train.py").write_text("print('ok')\n")
    (code_root / "pkg").mkdir()
    (code_root / "pkg" / "__main__.py").write_text("print('ok')\n")
    for module in ["tools.train", "pkg"]:
        config = {"entrypoint": None, "module": module}
        answer = api.post("/api/jobs", json=body(**config))
        assert answer.status_code == 201, (module, answer.text)


def test_unknown_interpreters_env_names_and_bad_shapes_are_refused(
    api: TestClient, db: Session
) -> None:
    assert refused(api, db, body(python="/usr/bin/python3")) == "config.python"
    assert refused(api, db, body(env={"LD_PRELOAD": "/tmp/x.so"})) == "config.env.LD_PRELOAD"
    assert refused(api, db, body(env={"GPUDECK_JOB_ID": "7"})) == "config.env.GPUDECK_JOB_ID"
    assert refused(api, db, body(args="--steps 10; rm -rf /")) == "config.args"
    assert refused(api, db, body(args=[1, 2])) == "config.args.0"
    assert refused(api, db, body(nproc_per_device=True)) == "config.nproc_per_device"
    assert refused(api, db, body(max_restarts=11)) == "config.max_restarts"
    assert refused(api, db, body(module="os; rm")) == "config.module"
    both = {"kind": "script", "config": {"entrypoint": "ddp_train.py", "module": "a"}, "count": 1}
    assert refused(api, db, both) == "config"
    assert refused(api, db, body(env={"GREETING": "hi"}, extra=1)) == "config.extra"
    # More host memory than the server allows (80% of its RAM by default), or too little to run.
    assert refused(api, db, body(host_memory_bytes=1 << 60)) == "config.host_memory_bytes"
    assert refused(api, db, body(host_memory_bytes=MIB)) == "config.host_memory_bytes"


def test_shell_metacharacters_are_plain_arguments_and_the_declared_memory_places_the_job(
    api: TestClient, db: Session
) -> None:
    args = ["--name", "$(touch /tmp/pwned)", "a; rm -rf /", "`id`", "|", "&&", "*"]
    created = api.post("/api/jobs", json=body(args=args, env={"GREETING": "hello"}))
    assert created.status_code == 201, created.text
    job = created.json()
    assert job["config"]["args"] == args
    assert job["estimate_bytes_per_device"] == 256 * MIB
    assert api.post(f"/api/jobs/{job['id']}/cancel").status_code == 200
    too_big = body(memory_per_device_bytes=81 * 1024**3)
    del too_big["count"]
    answer = api.post("/api/jobs", json={**too_big, "devices": [{"index": 7}]})
    assert answer.status_code == 422, answer.text  # no device can ever hold it: refused at once
    (error,) = answer.json()["detail"]
    assert error["loc"] == ["body", "config"] and error["msg"].startswith("does not fit"), error
