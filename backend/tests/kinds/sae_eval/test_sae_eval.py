"""The `sae_eval` kind in process: its strict config, its refusals at submit (each naming the
field), and its figures on a case computed by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from pydantic import ValidationError
from sae_eval_fixtures import SOURCE_JOB, FakeContext, write_rows, write_sae_checkpoint

from gpudeck.engine.checkpoint import write_checkpoint
from gpudeck.engine.kinds import InputError, get_kind
from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.sae.follow_up import evaluate_checkpoint
from gpudeck.kinds.sae_eval import density
from gpudeck.kinds.sae_eval.checks import check_inputs
from gpudeck.kinds.sae_eval.config import SaeEvalConfig
from gpudeck.kinds.sae_eval.run import density_histogram, train


def _config(**fields: Any) -> SaeEvalConfig:
    return SaeEvalConfig.model_validate({"source_job": SOURCE_JOB, **fields})


def test_the_config_is_strict() -> None:
    assert _config().step is None and _config().dataset.type == "heldout"
    for bad, where in (
        ({"source_job": "7"}, "source_job"),  # a string for a number
        ({"source_job": 7, "stpe": 3}, "stpe"),  # an unknown field
        ({"source_job": 7, "step": -1}, "step"),
        ({"source_job": 7, "batch_size": 0}, "batch_size"),
        ({"source_job": 7, "dataset": {"type": "file", "path": "../x.npy"}}, "dataset"),
        ({"source_job": 7, "dataset": {"type": "heldout", "path": "x.npy"}}, "dataset"),
        ({}, "source_job"),  # required: no job to default to
    ):
        with pytest.raises(ValidationError) as raised:
            SaeEvalConfig.model_validate_json(json.dumps(bad))
        assert where in str(raised.value), bad


def test_submit_refuses_what_is_not_there_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(InputError) as raised:
        check_inputs(_config(), tmp_path)
    assert raised.value.field == "source_job" and "no complete checkpoint" in raised.value.reason
    write_sae_checkpoint(tmp_path, 5, dataset={"type": "file", "path": "train.npy"})
    write_sae_checkpoint(tmp_path, 10, dataset={"type": "file", "path": "train.npy"})
    with pytest.raises(InputError) as raised:
        check_inputs(_config(step=7), tmp_path)
    assert raised.value.field == "step"
    assert raised.value.reason == f"job {SOURCE_JOB} has no checkpoint at step 7; it has 5, 10"
    with pytest.raises(InputError) as raised:  # its training file is gone
        check_inputs(_config(), tmp_path)
    assert raised.value.field == "dataset" and "train.npy" in raised.value.reason
    write_rows(tmp_path, "train.npy")  # 4 rows: too few to keep 1 in 20 out of training
    with pytest.raises(InputError) as raised:
        check_inputs(_config(), tmp_path)
    assert "kept no rows out of training" in raised.value.reason
    write_rows(tmp_path, "wide.npy", torch.zeros(4, 3).numpy())
    with pytest.raises(InputError) as raised:
        check_inputs(_config(dataset={"type": "file", "path": "wide.npy"}), tmp_path)
    assert raised.value.field == "dataset.path" and "d_in is 2" in raised.value.reason
    check_inputs(_config(step=5, dataset={"type": "file", "path": write_rows(tmp_path)}), tmp_path)


def test_a_job_without_sae_checkpoints_is_refused(tmp_path: Path) -> None:
    write_checkpoint(
        tmp_path / "checkpoints" / str(SOURCE_JOB),
        3,
        tensor_files={"linreg.safetensors": {"w": torch.zeros(1)}},
        keep=1,
    )
    with pytest.raises(InputError) as raised:
        check_inputs(_config(), tmp_path)
    assert raised.value.field == "source_job" and "is not an sae job" in raised.value.reason


def test_figures_match_the_hand_computed_case(tmp_path: Path) -> None:
    write_sae_checkpoint(tmp_path, 5)
    ctx = FakeContext(tmp_path)
    config = _config(dataset={"type": "file", "path": write_rows(tmp_path)}, batch_size=3)
    train(ctx, config)  # type: ignore[arg-type]

    [(step, metrics)] = ctx.reports
    assert step == 5  # reported at the checkpoint's step
    assert ctx.progress_seen == [(1, 2), (2, 2)]  # 4 rows in batches of 3
    # Rows [1, 0], [0, 2], [3, 0] are exact; [-1, 0] fires nothing: squared error 1.
    # Variance around the mean: 8.75 (dimension 0) + 3 (dimension 1).
    expected = {
        "l0": 3 / 4,
        "mse": 1 / 4,
        "explained_variance": 1 - 1 / 11.75,
        "dead_pct": 100 / 3,
        "dead_latents": 1.0,
        "rows": 4.0,
    }
    assert {k: metrics[k] for k in expected} == pytest.approx(expected, abs=1e-9)
    # Latent 0 fires on 2 rows of 4 (log10 -0.30), latent 1 on 1 (log10 -0.60), latent 2 on none.
    bars = {s.label: metrics[s.metric] for s in density.SERIES}
    assert bars == {**dict.fromkeys(bars, 0.0), "never": 1.0, "-1": 1.0, "-0.5": 1.0}

    [(saved_step, tensors, jsons)] = ctx.saved
    sparsity = tensors["sparsity.safetensors"]["sparsity"]
    assert saved_step == 5
    assert sparsity.tolist() == pytest.approx([-0.30103, -0.60206, -10.0], abs=1e-5)
    assert jsons["eval.json"]["l0"] == 0.75 and jsons["eval.json"]["source_job"] == SOURCE_JOB


def test_held_out_synthetic_rows_score_with_the_true_features(tmp_path: Path) -> None:
    write_sae_checkpoint(tmp_path, 5, dataset={"type": "synthetic", "num_features": 4})
    ctx = FakeContext(tmp_path)
    train(ctx, _config(batch_size=8192))  # type: ignore[arg-type]
    [(_, metrics)] = ctx.reports
    assert metrics["rows"] == 16_384  # the samples after num_samples (kinds/sae/heldout.py)
    assert 0 <= metrics["mmcs"] <= 1 and "features_recovered_pct" in metrics


def test_the_histogram_counts_every_latent_once() -> None:
    frequencies = torch.tensor([0.0, 1e-9, 1e-6, 0.0031, 0.5, 1.0], dtype=torch.float64)
    hist = density_histogram(frequencies)
    assert sum(hist.values()) == len(frequencies)
    assert hist[density.NEVER] == 1
    assert hist[density.bin_metric(0)] == 1  # below 1e-6
    assert hist[density.bin_metric(1)] == 1  # 1e-6 starts the first 0.5-wide bin
    assert hist[density.bin_metric(12)] == 2  # -0.5 to 0: 0.5 and 1.0


def test_an_sae_job_offers_its_evaluation_as_follow_up(tmp_path: Path) -> None:
    found = evaluate_checkpoint(SaeConfig(), tmp_path)
    kind = get_kind(found.kind)
    assert kind is not None and kind.config_model is SaeEvalConfig
    assert found.source_field == "source_job" and not found.needs_output
    SaeEvalConfig.model_validate({**found.config, found.source_field: 1})
