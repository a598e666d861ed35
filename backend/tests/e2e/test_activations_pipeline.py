"""The SAE pipeline on a real worker: an `activations` job extracts a tiny GPT-2's activations
on two devices, then an `sae` job trains on the file it wrote, named by its cfg.json."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from activations_fixtures import (
    CONTEXT,
    assert_same_rows,
    id_batches,
    reference,
    tiny_gpt2,
    token_ids,
)
from e2e_helpers import WorkerProcess, wait_status
from fastapi.testclient import TestClient

from gpudeck.core.config import Settings
from gpudeck.engine import kinds
from gpudeck.engine.map import output
from gpudeck.engine.map.output import read_output

KIND_MODULES = "e2e_kinds,gpudeck.kinds.activations"  # until the install has its entry point
TERMINAL = {"succeeded", "failed", "cancelled", "lost"}


@pytest.fixture
def with_activations(e2e_settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    monkeypatch.setenv("GPUDECK_KIND_MODULES", KIND_MODULES)
    kinds.registry.cache_clear()
    yield e2e_settings
    kinds.registry.cache_clear()


def _submit(api: TestClient, kind: str, config: dict[str, object]) -> int:
    body = {"kind": kind, "config": config, "devices": [{"index": 0}, {"index": 1}]}
    created = api.post("/api/jobs", json=body)
    assert created.status_code == 201, created.text
    return int(created.json()["id"])


def _model_and_ids(settings: Settings, sequences: int) -> Path:
    """A tiny GPT-2 under models/ and `sequences` rows of token ids in datasets/ids.npy."""
    model = tiny_gpt2(settings.data_dir / "models")
    (settings.data_dir / "datasets").mkdir(parents=True, exist_ok=True)
    np.save(settings.data_dir / "datasets" / "ids.npy", token_ids(sequences))
    return model


def _extraction(output: str, strategy: str) -> dict[str, object]:
    return {
        "model": "gpt2-tiny",
        "input": "ids.npy",
        "hook": "transformer.h.0",
        "context_length": CONTEXT,
        "output": output,
        "map": {"strategy": strategy, "chunk_size": 4, "batch_size": 2},
    }


def test_activations_then_sae_on_a_real_worker(
    with_activations: Settings,
    api: TestClient,
    start_worker: Callable[..., WorkerProcess],
    start_scheduler: Callable[..., WorkerProcess],
) -> None:
    """The SAE job is submitted before the extraction runs (it is held): "train an SAE on this
    output" names the extraction in depends_on, and d_in comes from the model's config."""
    data = with_activations.data_dir
    model = _model_and_ids(with_activations, 30)
    start_worker(GPUDECK_KIND_MODULES=KIND_MODULES)
    start_scheduler(GPUDECK_KIND_MODULES=KIND_MODULES)  # starts what waits in the queue

    config = _extraction("acts/e2e", "dynamic")
    held = {"kind": "activations", "config": config, "count": 2, "hold": True}
    created = api.post("/api/jobs", json=held)
    assert created.status_code == 201, created.text
    extraction = created.json()["id"]
    follow = api.get(f"/api/jobs/{extraction}/follow-up").json()
    assert (follow["kind"], follow["depends_on"]) == ("sae", [extraction])
    assert follow["config"] == {
        "d_in": 32,  # the model's hidden size: the extraction has not run
        "dataset": {"type": "file", "path": "acts/e2e/activations.safetensors"},
    }
    sae = {**follow["config"], "d_sae": 64, "batch_size": 32, "steps": 20, "metrics_interval": 10}
    body = {"kind": "sae", "config": sae, "count": 2, "depends_on": follow["depends_on"]}
    waiting = api.post("/api/jobs", json=body)  # its file does not exist yet: accepted
    assert waiting.status_code == 201, waiting.text
    assert api.post(f"/api/jobs/{extraction}/release").status_code == 200

    job = wait_status(api, extraction, TERMINAL, timeout_s=240)
    assert job["status"] == "succeeded", job["error"]
    progress = job["progress"]
    assert (progress["step"], progress["total"]) == (8, 8)  # chunks of 4 over 30 items, 2 ranks
    out = data / "datasets" / "acts" / "e2e"
    expected = reference(model, id_batches(token_ids(30), 2), layer=0)
    assert_same_rows(read_output(out)["activations"], expected)
    cfg = json.loads((out / "cfg.json").read_text())
    assert (cfg["d_in"], cfg["count"]) == (32, 30 * CONTEXT)
    after = api.get(f"/api/jobs/{extraction}/follow-up").json()
    assert after["depends_on"] == [] and after["config"]["dataset"] == cfg["sae_dataset"]

    sae_id = waiting.json()["id"]
    assert wait_status(api, sae_id, TERMINAL, timeout_s=240)["status"] == "succeeded"
    points = api.get(f"/api/jobs/{sae_id}/metrics").json()["items"]
    assert [p["step"] for p in points] == [10, 20]


def test_a_map_job_resumed_through_the_api_writes_only_the_missing_chunks(
    with_activations: Settings, api: TestClient, start_worker: Callable[..., WorkerProcess]
) -> None:
    data = with_activations.data_dir
    model = _model_and_ids(with_activations, 20)
    start_worker(GPUDECK_KIND_MODULES=KIND_MODULES)
    first = _submit(api, "activations", _extraction("acts/resumed", "balanced"))
    assert wait_status(api, first, TERMINAL, timeout_s=240)["status"] == "succeeded"

    # What a job killed part-way leaves: some chunks, no manifest (map jobs keep no checkpoint).
    out = data / "datasets" / "acts" / "resumed"
    (out / output.MANIFEST).unlink()
    for index in (1, 3):
        output.chunk_path(out, index).unlink()
    kept = {i: output.chunk_path(out, i).stat().st_ino for i in (0, 2, 4)}

    response = api.post(f"/api/jobs/{first}/resume", json={})
    assert response.status_code == 201, response.text
    resumed = response.json()
    assert resumed["resume_from_job_id"] == first
    finished = wait_status(api, resumed["id"], TERMINAL, timeout_s=240)
    assert finished["status"] == "succeeded"
    assert (finished["progress"]["step"], finished["progress"]["total"]) == (5, 5)
    assert {i: output.chunk_path(out, i).stat().st_ino for i in kept} == kept  # not rewritten
    expected = reference(model, id_batches(token_ids(20), 2), layer=0)
    assert_same_rows(read_output(out)["activations"], expected)


def test_a_training_job_without_a_checkpoint_still_cannot_be_resumed(
    with_activations: Settings, api: TestClient
) -> None:
    job = api.post(
        "/api/jobs",
        json={"kind": "sae", "config": {"d_in": 8, "d_sae": 16}, "devices": [{"index": 0}]},
    ).json()
    api.post(f"/api/jobs/{job['id']}/cancel")
    response = api.post(f"/api/jobs/{job['id']}/resume", json={})
    assert response.status_code == 409
    assert response.json()["detail"]["code"] == "no_checkpoint"
