"""On synthetic superposition data with known features, the SAE recovers them.

d_in 64, 512 true features, ~5 active per sample. See docs/trainer.md for the curve.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rankrunner import make_spec, read_events, run_ranks

QUALITY_CONFIG = {
    "d_in": 64,
    "d_sae": 1024,
    "l1_coefficient": 0.16,
    "lr": 4e-3,
    "batch_size": 1024,
    "steps": 2400,
    "metrics_interval": 200,
    "checkpoint_interval": 100_000,
    "seed": 0,
    "dataset": {"type": "synthetic", "num_features": 512, "active_features": 5},
}


@pytest.mark.slow  # about 2 minutes on two CPU cores
def test_recovers_the_true_features(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, QUALITY_CONFIG)
    assert run_ranks(spec, 2, timeout_s=290) == [0, 0]
    curve = [(e["data"]["step"], e["data"]["metrics"]) for e in read_events(spec, "metrics")]
    for step, m in curve:
        print(
            f"| {step} | {m['mse_loss']:.3f} | {m['l0']:.1f} | "
            f"{m['explained_variance']:.3f} | {m['mmcs']:.3f} | {m['dead_features']:.0f} |"
        )
    final = curve[-1][1]
    assert curve[-1][0] == QUALITY_CONFIG["steps"]
    assert final["mmcs"] >= 0.9
    assert final["explained_variance"] >= 0.9
