"""The real SAELens, in its own venv, loading a checkpoint directory GPUDeck wrote: the check the
engine's checkpoint tests and the Slurm executor's tests share."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def sae_lens_python() -> Path:
    """SAELens lives in its own venv (it pulls transformers, datasets, ...; ~1 GB) that
    `make test` creates: .venv-saelens at the repository root, or GPUDECK_SAELENS_PYTHON."""
    configured = os.environ.get("GPUDECK_SAELENS_PYTHON")
    python = Path(configured) if configured else REPO_ROOT / ".venv-saelens" / "bin" / "python"
    assert python.exists(), f"{python} is missing: `make saelens` installs SAELens for this test"
    return python


SAE_LENS_LOAD = """
import sys, torch
from safetensors.torch import load_file
from sae_lens import SAE
sae = SAE.load_from_disk(sys.argv[1])
ours = load_file(sys.argv[1] + "/sae_weights.safetensors")
x = torch.randn(8, ours["W_enc"].shape[0], dtype=ours["W_enc"].dtype)
f = torch.relu((x - ours["b_dec"]) @ ours["W_enc"] + ours["b_enc"])
expected = f @ ours["W_dec"] + ours["b_dec"]
assert type(sae).__name__ == "StandardSAE", type(sae)
for name in ("W_enc", "b_enc", "W_dec", "b_dec"):
    assert torch.equal(getattr(sae, name).detach(), ours[name]), name
assert torch.allclose(sae(x).detach(), expected, atol=1e-5), "forward pass differs"
print("loaded", type(sae).__name__, sae.cfg.d_in, sae.cfg.d_sae)
"""


# Any architecture: SAELens picks its class from cfg.json; the weights must be ours, unchanged.
SAE_LENS_LOAD_ANY = """
import sys, torch
from safetensors.torch import load_file
from sae_lens import SAE
sae = SAE.load_from_disk(sys.argv[1])
ours = load_file(sys.argv[1] + "/sae_weights.safetensors")
for name in ("W_enc", "W_dec", "b_dec"):
    assert torch.equal(getattr(sae, name).detach(), ours[name]), name
print("loaded", type(sae).__name__, sae.cfg.d_in, sae.cfg.d_sae)
"""
