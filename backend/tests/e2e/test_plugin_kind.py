"""A job kind installed with pip (examples/kinds/gpudeck-kind-linreg) plugs in through its entry
point alone: the API offers its schema, defaults, estimate and charts, and a real worker runs it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from e2e_helpers import BACKEND, WorkerProcess, wait_status
from fastapi.testclient import TestClient

from gpudeck.engine import kinds

EXAMPLE = BACKEND.parent / "examples" / "kinds" / "gpudeck-kind-linreg"


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example package installed (built, with its entry point metadata) into a directory."""
    source = tmp_path_factory.mktemp("plugin-source") / EXAMPLE.name
    shutil.copytree(EXAMPLE, source)  # setuptools builds in the source tree: not in the repo's
    target = tmp_path_factory.mktemp("plugin-site")
    command = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    command += ["--no-deps", "--no-build-isolation", "--target", str(target), str(source)]
    subprocess.run(command, check=True, capture_output=True)
    return target


@pytest.fixture
def installed(site_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(site_dir))
    kinds.registry.cache_clear()
    yield site_dir
    kinds.registry.cache_clear()


def test_installed_kind_is_offered_with_its_form_estimate_and_charts(
    installed: Path, api: TestClient
) -> None:
    # Installed first, as a user installs a kind and then starts GPUDeck: the API's start-up
    # warm-up reads the registry in a thread, and a read begun before the install could
    # otherwise store its older answer after the fixture cleared the cache.
    offered = {k["name"]: k for k in api.get("/api/kinds").json()}
    assert {"sae", "linreg"} <= set(offered)
    linreg = offered["linreg"]
    assert set(linreg["config_schema"]["properties"]) >= {"d_in", "batch_size", "steps", "lr"}
    assert linreg["defaults"]["d_in"] == 64
    assert [c["title"] for c in linreg["charts"]] == ["Loss", "Weight error"]
    assert api.get("/api/kinds/linreg").json() == linreg

    body = {"kind": "linreg", "config": {"d_in": 1024, "batch_size": 512}, "world_size": 2}
    estimate = api.post("/api/estimate", json=body).json()
    parts = {p["name"]: p["bytes"] for p in estimate["breakdown"]}
    assert parts["parameters"] == 4096 and estimate["per_rank_batch"] == 256
    assert estimate["bytes_per_device"] == sum(parts.values())

    refused = api.post("/api/jobs", json={"kind": "linreg", "config": {"lr": True}, "count": 1})
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["loc"][-1] == "lr"


def test_installed_kind_runs_on_a_real_worker(
    installed: Path, api: TestClient, start_worker: Callable[..., WorkerProcess]
) -> None:
    start_worker(PYTHONPATH=str(installed))
    config = {"d_in": 8, "batch_size": 64, "steps": 60, "metrics_interval": 20}
    body = {"kind": "linreg", "config": config, "devices": [{"index": 2}, {"index": 3}]}
    created = api.post("/api/jobs", json=body)
    assert created.status_code == 201, created.text
    job_id = created.json()["id"]
    job = wait_status(api, job_id, {"succeeded", "failed", "cancelled", "lost"})
    assert job["status"] == "succeeded", job["error"]
    assert job["progress"] == {"step": 60, "total": 60}
    points = api.get(f"/api/jobs/{job_id}/metrics").json()["items"]
    assert [p["step"] for p in points] == [20, 40, 60]
    assert points[-1]["metrics"]["weight_error"] < points[0]["metrics"]["weight_error"]
    checkpoints = api.get(f"/api/jobs/{job_id}/checkpoints").json()
    assert [c["step"] for c in checkpoints] == [60]
