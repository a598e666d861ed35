"""A job kind installed with pip (examples/kinds/gpudeck-kind-linreg) plugs in through its entry
point alone: the API offers its schema, defaults, estimate and charts, a real worker runs it,
its checkpoints (its own files, none of the `sae` kind's) are listed and downloaded, and a
cancelled job of it resumes from its final checkpoint.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import BACKEND, WorkerProcess, pip_install_package, wait_status
from fastapi.testclient import TestClient

from gpudeck.engine import kinds

EXAMPLE = BACKEND.parent / "examples" / "kinds" / "gpudeck-kind-linreg"


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example package installed (built, with its entry point metadata) into a directory."""
    return pip_install_package(
        EXAMPLE, tmp_path_factory.mktemp("plugin-source"), tmp_path_factory.mktemp("plugin-site")
    )


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


TERMINAL = {"succeeded", "failed", "cancelled", "lost"}


def _submit(api: TestClient, config: dict[str, Any], devices: list[int]) -> int:
    body = {"kind": "linreg", "config": config, "devices": [{"index": i} for i in devices]}
    created = api.post("/api/jobs", json=body)
    assert created.status_code == 201, created.text
    return int(created.json()["id"])


def test_installed_kind_runs_on_a_real_worker(
    installed: Path, api: TestClient, start_worker: Callable[..., WorkerProcess]
) -> None:
    start_worker(PYTHONPATH=str(installed))
    config = {"d_in": 8, "batch_size": 64, "steps": 60, "metrics_interval": 20}
    job_id = _submit(api, config, [2, 3])
    job = wait_status(api, job_id, TERMINAL)
    assert job["status"] == "succeeded", job["error"]
    assert (job["progress"]["step"], job["progress"]["total"]) == (60, 60)
    points = api.get(f"/api/jobs/{job_id}/metrics").json()["items"]
    assert [p["step"] for p in points] == [20, 40, 60]
    assert points[-1]["metrics"]["weight_error"] < points[0]["metrics"]["weight_error"]
    checkpoints = api.get(f"/api/jobs/{job_id}/checkpoints").json()
    assert [c["step"] for c in checkpoints] == [60]
    files = {f["name"]: f for f in checkpoints[0]["files"]}
    assert set(files) == {"linreg.safetensors", "linreg.json"}  # the marker is not listed
    assert api.get(files["linreg.json"]["url"]).json() == {"step": 60, "d_in": 8}
    weights = api.get(files["linreg.safetensors"]["url"])
    assert len(weights.content) == files["linreg.safetensors"]["size_bytes"]


def _wait_step(api: TestClient, job_id: int, step: int) -> None:
    deadline = time.monotonic() + 120
    while (api.get(f"/api/jobs/{job_id}").json()["progress"] or {}).get("step", 0) < step:
        assert time.monotonic() < deadline, "the job made no progress"
        time.sleep(0.1)


def test_a_cancelled_plugin_job_resumes_from_its_final_checkpoint(
    installed: Path, api: TestClient, start_worker: Callable[..., WorkerProcess]
) -> None:
    start_worker(PYTHONPATH=str(installed))
    config = {"d_in": 8, "batch_size": 64, "steps": 1_000_000, "metrics_interval": 50}
    first = _submit(api, config, [4, 5])
    _wait_step(api, first, 50)
    api.post(f"/api/jobs/{first}/cancel")
    assert wait_status(api, first, TERMINAL)["status"] == "cancelled"
    saved = api.get(f"/api/jobs/{first}/checkpoints").json()[-1]["step"]
    assert saved >= 50

    response = api.post(f"/api/jobs/{first}/resume", json={})
    assert response.status_code == 201, response.text
    resumed = response.json()["id"]
    _wait_step(api, resumed, saved - saved % 50 + 50)
    api.post(f"/api/jobs/{resumed}/cancel")
    assert wait_status(api, resumed, TERMINAL)["status"] == "cancelled"
    metrics = api.get(f"/api/jobs/{resumed}/metrics").json()["items"]
    assert metrics[0]["step"] == saved - saved % 50 + 50  # the curve goes on
    assert api.get(f"/api/jobs/{resumed}/checkpoints").json()[-1]["step"] > saved
    log = api.get(f"/api/jobs/{resumed}/logs", params={"rank": 0}).text
    assert f"at step {saved}" in log
