"""An SAE checkpoint evaluated on a real worker: an `sae` job trains on synthetic data, its
follow-up scores its first checkpoint on the rows it kept out of training, on two ranks, and
the figures are those of one process scoring the same rows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from e2e_helpers import WorkerProcess, wait_status
from fastapi.testclient import TestClient

from gpudeck.core.config import Settings
from gpudeck.kinds.sae.heldout import score
from gpudeck.kinds.sae_eval.checks import open_rows, read_source
from gpudeck.kinds.sae_eval.config import LossRecovered, SaeEvalConfig
from gpudeck.kinds.sae_eval.density import SERIES
from gpudeck.kinds.sae_eval.run import load_sae

TERMINAL = {"succeeded", "failed", "cancelled", "lost"}
SAE = {
    "d_in": 8,
    "d_sae": 32,
    "k": 2,
    "batch_size": 64,
    "steps": 20,
    "checkpoint_interval": 10,
    "metrics_interval": 10,
    "dataset": {"type": "synthetic", "num_features": 16, "active_features": 2.0},
}


def _run(api: TestClient, kind: str, config: dict[str, object], devices: list[int]) -> dict:
    body = {"kind": kind, "config": config, "devices": [{"index": i} for i in devices]}
    created = api.post("/api/jobs", json=body)
    assert created.status_code == 201, created.text
    job = wait_status(api, created.json()["id"], TERMINAL, timeout_s=240)
    assert job["status"] == "succeeded", job["error"]
    return job


def test_a_checkpoint_scored_on_two_ranks(
    e2e_settings: Settings, api: TestClient, start_worker: Callable[..., WorkerProcess]
) -> None:
    start_worker()
    sae = _run(api, "sae", SAE, [0])
    follow = api.get(f"/api/jobs/{sae['id']}/follow-up").json()
    config = {**follow["config"], "step": 10, "batch_size": 4096}
    evaluation = _run(api, "sae_eval", config, [0, 1])

    [point] = api.get(f"/api/jobs/{evaluation['id']}/metrics").json()["items"]
    assert point["step"] == 10  # the checkpoint's
    got = point["metrics"]
    assert sum(got[s.metric] for s in SERIES) == SAE["d_sae"]  # every latent in one bin
    assert got["rows"] == 16_384 and "mmcs" in got
    assert evaluation["progress"] == {**evaluation["progress"], "step": 2, "total": 2}

    # One process, the same checkpoint and rows: the ranks' sums add up to the same figures.
    parsed = SaeEvalConfig.model_validate(config)
    source = read_source(parsed, e2e_settings.data_dir)
    rows = open_rows(parsed, source, e2e_settings.data_dir)
    model = load_sae(source, torch.device("cpu"))
    one = score(
        model, [rows.source.rows(torch.arange(rows.count))], scale=1.0, device=model.W_enc.device
    )
    assert got["l0"] == pytest.approx(one.l0, rel=1e-9)
    assert got["explained_variance"] == pytest.approx(one.explained_variance, rel=1e-9)
    assert got["dead_pct"] == one.dead_pct

    [saved] = api.get(f"/api/jobs/{evaluation['id']}/checkpoints").json()
    assert {f["name"] for f in saved["files"]} == {"eval.json", "sparsity.safetensors"}
    listed = api.get(f"/api/jobs/{sae['id']}/follow-ups").json()
    assert [j["id"] for j in listed] == [evaluation["id"]]
    assert Path(e2e_settings.data_dir, "checkpoints", str(sae["id"]), "step_10").is_dir()


def test_loss_recovered_on_two_ranks_is_that_of_one_process(
    e2e_settings: Settings, api: TestClient, start_worker: Callable[..., WorkerProcess]
) -> None:
    """Each rank runs the model on every other batch of sequences; the summed losses give the
    figures of one process running them all."""
    import numpy as np
    from sae_eval_fixtures import (
        counting_gpt2,
        counting_ids,
        identity_sae,
        write_rows,
        write_sae_checkpoint,
    )

    from gpudeck.kinds.sae_eval import lm_loss

    start_worker()
    trained = {**SAE, "d_in": 32, "d_sae": 64, "steps": 10, "checkpoint_interval": 10}
    source = _run(api, "sae", trained, [0])["id"]
    data = e2e_settings.data_dir  # beside its checkpoint, one that reconstructs exactly
    write_sae_checkpoint(data, 1000, job=source, weights=identity_sae(32))
    counting_gpt2(data / "models")
    write_rows(data, "rows.npy", np.ones((4, 32), dtype=np.float32))
    np.save(data / "datasets" / "ids.npy", counting_ids(10))
    lm = {"type": "lm", "model": "gpt2-tiny", "input": "ids.npy", "hook": "transformer.h.0",
          "batch_size": 3}  # fmt: skip
    config = {"source_job": source, "step": 1000, "loss_recovered": lm,
              "dataset": {"type": "file", "path": "rows.npy"}}  # fmt: skip
    evaluation = _run(api, "sae_eval", config, [0, 1])

    [point] = api.get(f"/api/jobs/{evaluation['id']}/metrics").json()["items"]
    got = point["metrics"]
    assert evaluation["progress"] == {**evaluation["progress"], "step": 3, "total": 3}
    parsed = SaeEvalConfig.model_validate(config)
    model = load_sae(read_source(parsed, data), torch.device("cpu"))
    spec = parsed.loss_recovered
    assert isinstance(spec, LossRecovered)
    one = lm_loss.figures(lm_loss.batch_sums(lm_loss.open_model(spec, data, torch.device("cpu")),
                                             model, spec, 0, 10))  # fmt: skip
    assert got["lm_tokens"] == one["lm_tokens"] == 10 * 15
    for name in ("lm_loss_clean", "lm_loss_sae", "lm_loss_zero", "loss_recovered"):
        assert got[name] == pytest.approx(one[name], rel=1e-5), name
    assert got["loss_recovered"] == pytest.approx(1.0, abs=1e-5)
