"""A third-party kind written for kind API version 1 (tests/kind_versions/gpudeck-kind-oldreg:
the positional save_checkpoint and load_checkpoint, no api_version), installed with pip and
found through its entry point: the API offers it as version 1, a real worker runs it with one
deprecation line in the job's log, and a cancelled job of it resumes from its checkpoint."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from e2e_helpers import BACKEND, WorkerProcess, pip_install_package, wait_status
from fastapi.testclient import TestClient

from gpudeck.engine import kinds

PACKAGE = BACKEND / "tests" / "kind_versions" / "gpudeck-kind-oldreg"
TERMINAL = {"succeeded", "failed", "cancelled", "lost"}
SAVE_WARNING = "DeprecationWarning: kind 'oldreg' called save_checkpoint(step, weights"
LOAD_WARNING = "DeprecationWarning: checkpoint.load_checkpoint(path) is kind API version 1's"


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pip_install_package(
        PACKAGE, tmp_path_factory.mktemp("plugin-source"), tmp_path_factory.mktemp("plugin-site")
    )


@pytest.fixture
def installed(site_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(site_dir))
    kinds.registry.cache_clear()
    yield site_dir
    kinds.registry.cache_clear()


def _wait_step(api: TestClient, job_id: int, step: int) -> None:
    deadline = time.monotonic() + 120
    while ((job := api.get(f"/api/jobs/{job_id}").json())["progress"] or {}).get("step", 0) < step:
        assert time.monotonic() < deadline, f"the job made no progress: {job}"
        time.sleep(0.1)


def _run_until_cancelled(api: TestClient, job_id: int, step: int) -> None:
    _wait_step(api, job_id, step)
    api.post(f"/api/jobs/{job_id}/cancel")
    assert wait_status(api, job_id, TERMINAL)["status"] == "cancelled"


def test_a_version_1_kind_runs_on_a_worker_warns_in_its_log_and_resumes(
    installed: Path, api: TestClient, start_worker: Callable[..., WorkerProcess]
) -> None:
    offered = api.get("/api/kinds/oldreg").json()
    assert (offered["api_version"], offered["available"]) == (1, True)
    start_worker(PYTHONPATH=str(installed))
    config = {"steps": 1_000_000, "metrics_interval": 20, "checkpoint_interval": 20}
    body = {"kind": "oldreg", "config": config, "devices": [{"index": 0}, {"index": 1}]}
    first = api.post("/api/jobs", json=body).json()["id"]
    _run_until_cancelled(api, first, 40)
    checkpoints = api.get(f"/api/jobs/{first}/checkpoints").json()
    saved = checkpoints[-1]["step"]
    assert len(checkpoints) >= 2 and saved >= 40
    assert {f["name"] for f in checkpoints[-1]["files"]} == {
        "sae_weights.safetensors",  # what version 1 wrote, so its reader finds them
        "cfg.json",
        "trainer_state.safetensors",
        "trainer_state.json",
    }
    log = api.get(f"/api/jobs/{first}/logs", params={"rank": 0}).text
    assert log.count(SAVE_WARNING) == 1  # one line, however many checkpoints

    resumed = api.post(f"/api/jobs/{first}/resume", json={}).json()["id"]
    _run_until_cancelled(api, resumed, saved - saved % 20 + 20)
    metrics = api.get(f"/api/jobs/{resumed}/metrics").json()["items"]
    assert metrics[0]["step"] == saved - saved % 20 + 20  # the curve goes on
    log = api.get(f"/api/jobs/{resumed}/logs", params={"rank": 0}).text
    assert f"at step {saved}" in log and log.count(LOAD_WARNING) == 1
