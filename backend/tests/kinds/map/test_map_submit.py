"""Submitting map jobs with a user's function: only users holding `run_code`, and a malformed
or unreachable function, a path out of the code roots or batch size `auto` are a 422 naming
the field, before any job row or device is held."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from harness import auth_headers, create_token, register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings


@pytest.fixture
def api(client: TestClient, db: Session, settings: Settings, map_env: dict[str, str]) -> TestClient:
    register_devices(db)
    (settings.data_dir / "datasets").mkdir(parents=True, exist_ok=True)
    np.save(settings.data_dir / "datasets" / "x.npy", np.zeros((4, 2), dtype=np.float32))
    return client


def body(**config: Any) -> dict[str, Any]:
    base = {"function": "userfns:affine", "input": "x.npy", "output": "out/y"}
    return {"kind": "map", "config": {**base, **config}, "count": 1}


def jobs(db: Session) -> int:
    db.rollback()
    return int(db.scalar(text("SELECT count(*) FROM jobs")) or 0)


def test_only_users_holding_run_code_submit_map_functions(
    api: TestClient, db: Session, session_factory: sessionmaker[Session]
) -> None:
    alice = auth_headers(create_token(session_factory, "user", name="alice"))
    refused = api.post("/api/jobs", json=body(), headers=alice)
    assert refused.status_code == 403 and refused.json()["detail"]["field"] == "kind"
    assert jobs(db) == 0
    assert api.patch("/api/users/alice", json={"run_code": True}).status_code == 200
    created = api.post("/api/jobs", json=body(), headers=alice)
    assert created.status_code == 201, created.text


def test_bad_references_and_paths_are_refused_naming_the_field(
    api: TestClient, db: Session, code_root: Path, tmp_path: Path, settings: Settings
) -> None:
    (tmp_path / "elsewhere").mkdir()
    (settings.data_dir / "datasets" / "linked").symlink_to(tmp_path / "elsewhere")
    (code_root / "out").symlink_to(tmp_path / "elsewhere")
    cases = [
        ({"function": "userfns.affine"}, "function", "module:function"),
        ({"function": "userfns:affine()"}, "function", "module:function"),
        ({"function": "../userfns:affine"}, "function", "module:function"),
        ({"function": "nothere:run"}, "function", "no module 'nothere'"),
        ({"code": "userfns.py", "function": "other:affine"}, "function", "'userfns'"),
        ({"code": "../code"}, "code", "'..'"),
        ({"code": "out"}, "code", "outside the code roots"),
        ({"code": str(tmp_path)}, "code", "outside the code roots"),
        ({"map": {"batch_size": "auto"}}, "map.batch_size", "give a number"),
        ({"input": "missing.npy"}, "input", "not found"),
        # An output through a symlinked folder of datasets/ wrote outside the data directory.
        ({"output": "linked/y"}, "output", "escapes"),
    ]
    for config, field, reason in cases:
        answer = api.post("/api/jobs", json=body(**config))
        assert answer.status_code == 422, (config, answer.text)
        detail = answer.json()["detail"][0]
        assert ".".join(map(str, detail["loc"][1:])) == f"config.{field}", (config, detail)
        assert reason in detail["msg"], (config, detail)
    assert jobs(db) == 0
