"""What the script form needs of the API: memory typed with a unit ('4 GiB') is read as bytes,
every field has a label in words, and the code roots' .py files are offered for the entry
point, each with its root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from harness import register_devices
from sqlalchemy.orm import Session

from gpudeck.core.config import Settings

GIB = 1024**3


@pytest.fixture
def api(client: TestClient, db: Session, script_env: dict[str, str]) -> TestClient:
    register_devices(db)
    return client


def submit(api: TestClient, **config: Any) -> Any:
    body = {"kind": "script", "config": {"entrypoint": "ddp_train.py", **config}, "count": 1}
    return api.post("/api/jobs", json=body)


@pytest.mark.parametrize(
    ("typed", "bytes_"),
    [("4 GiB", 4 * GIB), ("256MiB", 256 * 1024**2), ("1.5 gib", 3 * GIB // 2), ("2 GB", 2 * 10**9),
     ("1073741824 B", GIB), (GIB, GIB)],
)  # fmt: skip
def test_memory_is_taken_with_a_unit_and_kept_in_bytes(
    api: TestClient, typed: str | int, bytes_: int
) -> None:
    created = submit(api, memory_per_device_bytes=typed, host_memory_bytes="1 GiB")
    assert created.status_code == 201, created.text
    job = api.get(f"/api/jobs/{created.json()['id']}").json()
    assert job["config"]["memory_per_device_bytes"] == bytes_
    assert job["config"]["host_memory_bytes"] == GIB
    assert job["estimate_bytes_per_device"] == bytes_
    api.post(f"/api/jobs/{job['id']}/cancel")


@pytest.mark.parametrize("typed", ["4 gigs", "1073741824"])  # text without a unit is no size
def test_a_size_that_does_not_read_is_refused_saying_how_to_write_one(
    api: TestClient, typed: str
) -> None:
    answer = submit(api, memory_per_device_bytes=typed)
    assert answer.status_code == 422
    [error] = answer.json()["detail"]
    assert error["loc"][-1] == "memory_per_device_bytes"
    expected = f"{typed!r} is not a size: a number of bytes, or text with a unit (4 GiB, 512 MiB)"
    assert expected in error["msg"]
    low = submit(api, host_memory_bytes="100 MiB")  # under the 512 MiB floor, as bytes
    assert low.status_code == 422 and low.json()["detail"][0]["loc"][-1] == "host_memory_bytes"


def test_the_form_schema_labels_every_field_in_words_and_marks_memory_as_bytes(
    api: TestClient,
) -> None:
    schema = api.get("/api/kinds/script").json()["config_schema"]
    titles = {name: field["title"] for name, field in schema["properties"].items()}
    assert all("_" not in title for title in titles.values()), titles
    assert titles["memory_per_device_bytes"] == "memory per device"
    assert titles["nproc_per_device"] == "processes per device"
    units = {n for n, f in schema["properties"].items() if f.get("x-unit") == "bytes"}
    assert units == {"memory_per_device_bytes", "host_memory_bytes"}
    assert schema["properties"]["entrypoint"]["x-choices"] == "code_roots"


def test_the_code_roots_py_files_are_offered_with_their_root(
    api: TestClient, code_root: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settings, "script_code_roots", str(code_root))  # the API's settings
    (code_root / "pkg").mkdir()
    (code_root / "pkg" / "train.py").write_text("print('hi')\n")
    (code_root / ".hidden.py").write_text("")
    (code_root / "README.md").write_text("")
    listed = api.get("/api/choices/code_roots").json()
    assert [c["value"] for c in listed] == [
        "ddp_train.py", "echo_args.py", "ignore_sigterm.py", "pkg/train.py",
    ]  # fmt: skip
    assert {c["root"] for c in listed} == {str(code_root)}
    assert listed[-1]["detail"] == f"in {code_root}"
