"""On synthetic superposition data with known features, a default SAE run recovers them.

`SaeConfig()` as it is (TopK k 5, d_in 64, d_sae 512; 512 true features, ~5 active per
sample) with only the metrics and checkpoint intervals set. See docs/sae.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rankrunner import make_spec, read_events, run_ranks

from gpudeck.kinds.sae.config import SaeConfig

INTERVALS = {"metrics_interval": 200, "checkpoint_interval": 100_000}


def test_short_runs_keep_default_schedules_valid() -> None:
    """The default warm-up and decay are shares of the run, so a few-step default config is
    valid and has the same shape (counts are clipped to the run)."""
    short = SaeConfig(steps=10)
    assert short.schedule_lengths() == (0, 2, 0)
    assert [short.lr_factor(s) for s in (0, 8, 9)] == [1.0, 1.0, 0.5]
    counted = SaeConfig(steps=10, lr_warm_up_steps=100)
    assert counted.schedule_lengths() == (10, 0, 0)
    full = SaeConfig()
    warm, decay, _ = full.schedule_lengths()
    assert warm + decay <= full.steps
    assert full.lr_factor(full.steps - 1) == 1 / decay  # SAELens's decay ends at lr/decay


@pytest.mark.slow  # about 2 minutes on two CPU cores
@pytest.mark.long
def test_default_run_recovers_the_true_features(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, INTERVALS)
    assert run_ranks(spec, 2, timeout_s=400) == [0, 0]
    curve = [(e["data"]["step"], e["data"]["metrics"]) for e in read_events(spec, "metrics")]
    print("\n| step | mse_loss | l0 | explained_variance | mmcs | dead_features |")
    for step, m in curve:
        print(
            f"| {step} | {m['mse_loss']:.3f} | {m['l0']:.1f} | "
            f"{m['explained_variance']:.3f} | {m['mmcs']:.3f} | {m['dead_features']:.0f} |"
        )
    final = curve[-1][1]
    assert curve[-1][0] == SaeConfig().steps
    # The bar for the dashboard's default job: the true features recovered at an L0 of
    # at most twice the data's true sparsity (5).
    assert final["mmcs"] >= 0.95
    assert final["l0"] <= 10
    assert final["explained_variance"] >= 0.75  # 0.774 measured (docs/sae.md)
    assert final["dead_features"] <= 0.05 * SaeConfig().d_sae
