"""Endpoints over a real run: resume from the newest checkpoint, downloads, logs, the WebSocket,
and a worker stopped with SIGTERM (its jobs end cancelled after a final checkpoint)."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Callable
from typing import Any

from e2e_helpers import WorkerProcess, wait_status
from fastapi.testclient import TestClient
from safetensors.torch import load

from gpudeck.core.config import Settings

TERMINAL = {"succeeded", "failed", "cancelled", "lost"}
SAE_CONFIG: dict[str, Any] = {
    "d_in": 16,
    "d_sae": 64,
    "batch_size": 64,
    "steps": 30,
    "metrics_interval": 5,
    "checkpoint_interval": 10,
    "seed": 2,
    "dataset": {
        "type": "synthetic",
        "num_features": 32,
        "active_features": 3,
        "num_samples": 100_000,
    },
}


def submit(api: TestClient, config: dict[str, Any], devices: list[int]) -> int:
    body = {"kind": "sae", "config": config, "devices": [{"index": i} for i in devices]}
    response = api.post("/api/jobs", json=body)
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def test_resume_continues_from_the_newest_checkpoint(
    api: TestClient, start_worker: Callable[..., WorkerProcess], e2e_settings: Settings
) -> None:
    start_worker()
    config = {**SAE_CONFIG, "steps": 100_000, "checkpoint_interval": 100_000}
    first = submit(api, config, [0, 1])
    wait_status(api, first, {"running"})
    while api.get(f"/api/jobs/{first}").json()["progress"]["step"] < 5:
        time.sleep(0.1)
    api.post(f"/api/jobs/{first}/cancel")
    assert wait_status(api, first, TERMINAL)["status"] == "cancelled"
    saved = api.get(f"/api/jobs/{first}/checkpoints").json()[-1]["step"]
    # What a rank 0 killed mid-write leaves behind, found when the job resumes from there.
    partial = e2e_settings.data_dir / "checkpoints" / str(first) / ".tmp-step_999-4242"
    partial.mkdir()
    (partial / "sae_weights.safetensors").write_bytes(b"\0" * 1024)

    response = api.post(f"/api/jobs/{first}/resume", json={})
    assert response.status_code == 201, response.text
    resumed = response.json()
    assert resumed["resume_from_job_id"] == first
    assert [d["index"] for d in resumed["devices"]] == [0, 1]  # the same devices, now free
    # Cancelled once its first metrics are stored (a fixed second was too short for a loaded
    # machine's start, and the curve was then empty).
    deadline = time.monotonic() + 120
    while not api.get(f"/api/jobs/{resumed['id']}/metrics").json()["items"]:
        assert time.monotonic() < deadline, "the resumed job reported no metrics"
        time.sleep(0.1)
    api.post(f"/api/jobs/{resumed['id']}/cancel")
    wait_status(api, resumed["id"], TERMINAL)
    metrics = api.get(f"/api/jobs/{resumed['id']}/metrics").json()["items"]
    assert metrics and metrics[0]["step"] == saved - saved % 5 + 5  # the curve goes on
    final = api.get(f"/api/jobs/{resumed['id']}/checkpoints").json()[-1]["step"]
    assert final > saved
    assert not partial.exists()


def test_checkpoint_download_logs_and_websocket(
    api: TestClient,
    start_worker: Callable[..., WorkerProcess],
    start_scheduler: Callable[..., WorkerProcess],
    e2e_settings: Settings,
) -> None:
    start_worker()
    start_scheduler()
    # Held until the feed is open: a quick job could otherwise end before the client connects,
    # and the feed of an ended job is its snapshot alone.
    body = {"kind": "sae", "config": SAE_CONFIG, "devices": [{"index": 2}, {"index": 3}]}
    response = api.post("/api/jobs", json={**body, "hold": True})
    assert response.status_code == 201, response.text
    job_id = int(response.json()["id"])
    with api.websocket_connect(f"/ws/jobs/{job_id}") as ws:
        frames = [ws.receive_json()]
        assert api.post(f"/api/jobs/{job_id}/release").status_code == 200
        while not (frames[-1]["type"] == "status" and frames[-1]["data"]["status"] in TERMINAL):
            frames.append(ws.receive_json())
    types = {f["type"] for f in frames}
    assert frames[0]["type"] == "snapshot" and frames[0]["job"]["id"] == job_id
    assert {"status", "metrics", "progress", "checkpoint"} <= types
    assert frames[-1]["data"]["status"] == "succeeded"

    ckpt = api.get(f"/api/jobs/{job_id}/checkpoints").json()[-1]
    assert ckpt["step"] == 30
    file = next(f for f in ckpt["files"] if f["name"] == "sae_weights.safetensors")
    body = api.get(file["url"]).content
    assert len(body) == file["size_bytes"] and load(body)["W_enc"].shape == (16, 64)
    cfg = api.get(f"/api/jobs/{job_id}/checkpoints/30/files/cfg.json").json()
    assert cfg["d_sae"] == 64
    for bad in ("..%2F..%2Fetc%2Fpasswd", "..", "passwd", "%2e%2e"):
        assert api.get(f"/api/jobs/{job_id}/checkpoints/30/files/{bad}").status_code == 404

    assert api.get(f"/api/jobs/{job_id}/logs", params={"rank": 2}).status_code == 422
    rank0 = api.get(f"/api/jobs/{job_id}/logs", params={"rank": 0}).text
    assert re.search(r"step 30: .*overall_loss=", rank0)  # the log tells the run's story
    assert "step 30: checkpoint written to" in rank0
    followed = api.get(f"/api/jobs/{job_id}/logs", params={"rank": 1, "follow": True})
    assert followed.status_code == 200  # the job is over, so the stream ends


def test_sigterm_stops_the_worker_after_final_checkpoints(
    api: TestClient, start_worker: Callable[..., WorkerProcess], e2e_settings: Settings
) -> None:
    worker = start_worker()
    config = {**SAE_CONFIG, "steps": 100_000, "checkpoint_interval": 100_000}
    job_id = submit(api, config, [4, 5])
    wait_status(api, job_id, {"running"})
    while api.get(f"/api/jobs/{job_id}").json()["progress"]["step"] < 5:
        time.sleep(0.1)
    os.killpg(worker.proc.pid, signal.SIGTERM)  # as `gpudeck run` stops its parts
    assert worker.proc.wait(60) == 0
    job = api.get(f"/api/jobs/{job_id}").json()
    assert job["status"] == "cancelled", job
    assert "shut down" in (job["error"] or "")
    step = api.get(f"/api/jobs/{job_id}/checkpoints").json()[-1]["step"]
    state = json.loads(
        (
            e2e_settings.data_dir
            / "checkpoints"
            / str(job_id)
            / f"step_{step}"
            / "trainer_state.json"
        ).read_text()
    )
    assert state["step"] == step >= 5
