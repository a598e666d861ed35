"""Every architecture x dtype x device type the form offers trains (or would be refused at
submit): on CPU each combination runs a short job with its defaults, through the TopK
warm-up's switch, and writes a finite checkpoint; every combination has an estimate for both
device types that counts the latent-tracking tensors. The CUDA runs are the gpu-marked test
below (the device machine)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import get_args

import pytest
import torch
from rankrunner import make_spec, read_events, run_ranks, tiny_config

from gpudeck.engine.checkpoint import latest_checkpoint
from gpudeck.kinds.sae.checkpoint import load as load_checkpoint
from gpudeck.kinds.sae.config import Architecture, SaeConfig
from gpudeck.kinds.sae.memory import estimate_sae, latent_tracking_bytes

ARCHITECTURES = get_args(Architecture)
DTYPES = get_args(SaeConfig.model_fields["dtype"].annotation)
MATRIX = list(itertools.product(ARCHITECTURES, DTYPES))


def test_the_matrix_is_what_the_form_offers() -> None:
    assert set(ARCHITECTURES) == {"topk", "batchtopk", "jumprelu", "standard"}
    assert set(DTYPES) == {"float32", "bfloat16"}


def _run(tmp_path: Path, architecture: str, dtype: str, device_type: str) -> None:
    # The defaults of each architecture (warm-up, frequency rule, coefficient), 24 steps: the
    # warm-ups (half the run) end inside it, so both phases train.
    config = tiny_config(architecture=architecture, dtype=dtype, k=3, steps=24, metrics_interval=12)
    for field in ("l1_warm_up_steps", "l1_coefficient"):
        config.pop(field)
    spec = make_spec(tmp_path, config)
    if device_type == "cuda":
        spec = spec.replace(device_type="cuda")
    assert run_ranks(spec, 1) == [0]
    path = latest_checkpoint(spec.checkpoint_dir)
    assert path is not None and path.name == "step_24"
    ckpt = load_checkpoint(path)
    assert all(torch.isfinite(w.float()).all() for w in ckpt.weights.values())
    assert ckpt.weights["W_enc"].dtype == getattr(torch, dtype)
    last = read_events(spec, "metrics")[-1]["data"]["metrics"]
    assert 0 < last["heldout_l0"] <= 64 and 0 <= last["heldout_dead_pct"] <= 100


@pytest.mark.parametrize(("architecture", "dtype"), MATRIX)
def test_every_architecture_and_dtype_trains_on_cpu(
    tmp_path: Path, architecture: str, dtype: str
) -> None:
    _run(tmp_path, architecture, dtype, "cpu")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize(("architecture", "dtype"), MATRIX)
def test_every_architecture_and_dtype_trains_on_cuda(
    tmp_path: Path, architecture: str, dtype: str
) -> None:
    _run(tmp_path, architecture, dtype, "cuda")


@pytest.mark.parametrize(("architecture", "dtype"), MATRIX)
@pytest.mark.parametrize("device_type", ["cpu", "cuda"])
def test_every_combination_has_an_estimate_with_the_tracking_tensors(
    architecture: str, dtype: str, device_type: str
) -> None:
    config = SaeConfig(
        architecture=architecture, dtype=dtype, d_in=64, d_sae=12_288, batch_size=256
    )
    estimate = estimate_sae(config, device_type=device_type)  # type: ignore[arg-type]
    parts = {c.name: c.bytes for c in estimate.breakdown}
    tracking = latent_tracking_bytes(config, 512 if device_type == "cuda" else 1)
    assert parts["latent_tracking"] == tracking > 0
    # d_sae 12,288: int64 last firing step, float64 counts (+ the TopK family's two more).
    per_latent = 32 if architecture in ("topk", "batchtopk") else 16
    assert tracking >= per_latent * 12_288
    assert sum(parts.values()) == estimate.bytes_per_device
