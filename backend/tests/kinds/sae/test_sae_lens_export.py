"""Every architecture's checkpoint loads in the real SAELens unchanged and computes the same SAE.

A tiny run of each architecture (on data far from unit scale, so the folded activation scale
is not 1), then SAELens (its own venv, see tests/saelens_server.py's compare) loads the
checkpoint with SAE.load_from_disk and its encode/decode are compared with GPUDeck's model on
the same raw input: max abs difference at most 1e-5 in fp32.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from rankrunner import make_spec, run_ranks, tiny_config
from saelens_check import SaeLens
from safetensors.torch import load_file, save_file

from gpudeck.engine.checkpoint import latest_checkpoint
from gpudeck.kinds.sae.checkpoint import load as load_checkpoint
from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.sae.train import build_model

EXPECTED_CLASS = {
    "standard": "StandardSAE",
    "topk": "TopKSAE",
    "batchtopk": "JumpReLUSAE",  # saved for inference as SAELens saves BatchTopK
    "jumprelu": "JumpReLUSAE",
}


@pytest.mark.parametrize("architecture", list(EXPECTED_CLASS))
def test_sae_lens_loads_every_architecture(
    tmp_path: Path, architecture: str, sae_lens: SaeLens
) -> None:
    data_dir = tmp_path / "data"
    (data_dir / "datasets").mkdir(parents=True)
    # Raw activations of norm ~100: the trainer scales them to ~sqrt(16) = 4 by a power of 2:
    # 4 / 100 = 2^-4.6, so 1/32.
    acts = 25 * torch.randn(2000, 16, generator=torch.Generator().manual_seed(0)).abs()
    save_file({"acts": acts}, data_dir / "datasets" / "acts.safetensors")
    config = tiny_config(
        architecture=architecture,
        k=4,
        steps=30,
        l0_coefficient=0.05,
        dataset={"type": "file", "path": "acts.safetensors"},
    )
    spec = make_spec(tmp_path, config, data_dir=data_dir)
    assert run_ranks(spec, 1) == [0]
    path = latest_checkpoint(spec.checkpoint_dir)
    assert path is not None
    ckpt = load_checkpoint(path)
    scale = ckpt.state["activation_scale"]
    assert scale == 1 / 32 and ckpt.cfg["normalize_activations"] == "none"

    model = build_model(SaeConfig.model_validate(config), torch.device("cpu"))
    model.load_exported(ckpt.weights, scale)
    x = acts[:64]
    with torch.no_grad():
        f = model.encode(x * scale)
        x_hat = model.decode(f) / scale
    assert (f > 0).any(), (
        "the tiny run must leave some latents active for the check to mean anything"
    )
    save_file({"x": x, "f": f, "x_hat": x_hat}, tmp_path / "ref.safetensors")
    result = sae_lens.check("compare", path, tmp_path / "ref.safetensors")
    assert result.ok, result.error[-3000:]
    assert f"loaded {EXPECTED_CLASS[architecture]}" in result.output, result.output

    # sparsity.safetensors as SAELens writes it: log10 of each latent's firing frequency.
    log_density = load_file(path / "sparsity.safetensors")["sparsity"]
    assert log_density.shape == (config["d_sae"],) and bool((log_density <= 0).all())
    mean_l0 = float((10 ** log_density.double() - 1e-10).sum())  # sum of frequencies = L0
    assert 0 < mean_l0 <= config["d_sae"]
    if architecture in ("topk", "batchtopk"):  # k per sample (on average, for BatchTopK)
        assert mean_l0 == pytest.approx(4, abs=0.1)
