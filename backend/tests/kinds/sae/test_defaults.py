"""Schedules as shares of the run, the defaults each architecture gets, and the held-out
evaluation (issue 26). The figures behind the defaults: docs/sae.md, bench/sae_quality.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from pydantic import ValidationError
from rankrunner import make_spec, read_events, run_ranks, tiny_config

from gpudeck.kinds.sae.arch import build_sae
from gpudeck.kinds.sae.config import SaeConfig, SyntheticDataset
from gpudeck.kinds.sae.data import FileSource, SyntheticSource
from gpudeck.kinds.sae.heldout import HELDOUT_ROWS, evaluate, feature_recovery, split_heldout


def test_schedules_are_shares_of_the_run_by_default() -> None:
    # A 1,500-step run and a 2,400-step one get the same shape: 5 % warm-up, 20 % decay.
    assert SaeConfig(steps=1500).schedule_lengths() == (75, 300, 0)
    assert SaeConfig(steps=2400).schedule_lengths() == (120, 480, 0)
    # Absolute counts are still counts.
    counted = SaeConfig(steps=1500, lr_warm_up_steps=100, lr_decay_steps=300)
    assert counted.schedule_lengths() == (100, 300, 0)
    # Clipped to the run: a short default run is valid, and the lr ends at lr / decay.
    short = SaeConfig(steps=10)
    warm, decay, _ = short.schedule_lengths()
    assert warm + decay <= 10
    full = SaeConfig()
    _, decay, _ = full.schedule_lengths()
    assert full.lr_factor(full.steps - 1) == 1 / decay


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("lr_decay_steps", 1.5),  # a share above the whole run
        ("lr_decay_steps", 300.0),  # a float is a share: a count must be a whole number
        ("lr_warm_up_steps", math.nan),
        ("topk_warm_up_steps", -0.1),
        ("l1_warm_up_steps", math.inf),
    ],
)
def test_a_bad_share_is_refused_by_name(field: str, value: float) -> None:
    with pytest.raises(ValidationError) as error:
        SaeConfig.model_validate({field: value})
    assert all(e["loc"][0] == field for e in error.value.errors())


def test_each_architecture_gets_its_measured_defaults() -> None:
    topk = SaeConfig(architecture="topk", steps=1500, k=5, d_sae=512)
    # The frequency rule: 1 % of the average latent's rate, k / d_sae.
    assert topk.topk_warm_up_length() == 0
    assert topk.dead_min_frequency_value == pytest.approx(5 / 512 / 100)
    batchtopk = SaeConfig(architecture="batchtopk", steps=1500, k=64, d_sae=65_536)
    assert batchtopk.topk_warm_up_length() == 750
    assert batchtopk.dead_min_frequency_value == pytest.approx(64 / 65_536 / 100)
    assert SaeConfig(architecture="jumprelu").dead_min_frequency_value == 0.0  # no AuxK
    jumprelu = SaeConfig(architecture="jumprelu", steps=1500, d_in=512)
    assert jumprelu.topk_warm_up_length() == 750  # half the run, as BatchTopK
    assert jumprelu.l0_coefficient_value == 8.0  # d_in / 64
    assert jumprelu.sparsity_coefficient == 8.0
    # Set explicitly, the user's value wins; 0 turns the warm-up off.
    own = SaeConfig(
        architecture="batchtopk", steps=1500, topk_warm_up_steps=0, dead_min_frequency=0.0
    )
    assert (own.topk_warm_up_length(), own.dead_min_frequency_value) == (0, 0.0)
    assert SaeConfig(architecture="jumprelu", topk_warm_up_steps=0.25).topk_warm_up_length() == (
        600  # a quarter of the default 2,400 steps
    )
    assert SaeConfig(architecture="jumprelu", l0_coefficient=0.3).l0_coefficient_value == 0.3
    # JumpReLU clips the gradient's norm at 1 (as SAELens); the others do not; 0 turns it off.
    assert jumprelu.grad_clip_norm_value == 1.0 and topk.grad_clip_norm_value is None
    assert SaeConfig(architecture="jumprelu", grad_clip_norm=0.0).grad_clip_norm_value is None
    assert SaeConfig(architecture="topk", grad_clip_norm=0.5).grad_clip_norm_value == 0.5


def test_held_out_rows_are_kept_out_of_training(tmp_path: Path) -> None:
    synthetic = SyntheticSource(SyntheticDataset(num_samples=10_000), d_in=8, seed=1)
    train, held = split_heldout(synthetic, 512)
    assert train is synthetic and held is not None and len(held) == HELDOUT_ROWS
    # The samples after the training ones: the same generator, never trained on.
    assert torch.equal(held.rows(torch.tensor([0])), synthetic.rows(torch.tensor([10_000])))

    path = tmp_path / "rows.npy"
    np.save(path, np.arange(4000 * 4, dtype=np.float32).reshape(4000, 4))
    source = FileSource(path, None, 4)
    train, held = split_heldout(source, 256)
    assert held is not None and (len(train), len(held)) == (3800, 200)  # 1 row in 20
    assert float(held.rows(torch.tensor([0]))[0, 0]) == 3800 * 4
    _, none = split_heldout(source, 3900)  # what is left would not fill a batch
    assert none is None


def test_held_out_dead_latents_count_latents_that_never_fire() -> None:
    config = SaeConfig(architecture="topk", d_in=16, d_sae=64, k=4)
    model = build_sae(config)
    model.initialize(torch.Generator().manual_seed(0))
    with torch.no_grad():
        model.b_enc[:16] = -1e4  # these can never be among a sample's top 4
    rows = torch.randn(1000, 16)
    figures = evaluate(model, rows, scale=1.0, chunk=128, device=torch.device("cpu"))
    assert figures["heldout_dead_pct"] >= 25.0
    assert figures["heldout_l0"] == 4.0
    whole = evaluate(model, rows, scale=1.0, chunk=1000, device=torch.device("cpu"))
    assert whole == pytest.approx(figures)  # chunking does not change the figures


def test_feature_recovery_counts_features_with_a_close_decoder_row() -> None:
    features = torch.eye(4, 8)
    w_dec = torch.cat([torch.eye(2, 8), torch.ones(3, 8)])
    figures = feature_recovery(features, w_dec)
    assert figures["features_recovered_pct"] == 50.0
    assert figures["mmcs"] == pytest.approx((1 + 1 + 2 / math.sqrt(8)) / 4)


def test_every_checkpoint_reports_held_out_figures(tmp_path: Path) -> None:
    config = tiny_config(
        architecture="batchtopk", k=3, steps=40, metrics_interval=10, checkpoint_interval=20
    )
    spec = make_spec(tmp_path, config)
    assert run_ranks(spec, 1) == [0]
    reports = {e["data"]["step"]: e["data"]["metrics"] for e in read_events(spec, "metrics")}
    assert sorted(reports) == [10, 20, 30, 40]
    for step in (20, 40):  # the checkpoints
        assert 0 <= reports[step]["heldout_dead_pct"] <= 100
        assert reports[step]["heldout_l0"] > 0
        assert "heldout_explained_variance" in reports[step]
    assert "heldout_dead_pct" not in reports[10]
    # Synthetic data: the truth is known, so every report says how much of it was found.
    assert 0 <= reports[10]["features_recovered_pct"] <= 100 and "mmcs" in reports[10]
    assert reports[40]["dead_pct"] == 100 * reports[40]["dead_features"] / 64
    # The dead count is over the steps the run has had (40 of a 1,000-step window), and says so.
    assert [reports[s]["dead_window_steps"] for s in sorted(reports)] == [10, 20, 30, 40]
