"""The real SAELens, loading checkpoint directories GPUDeck wrote: run by SAELens's own venv's
Python (see saelens_check.py), once per test process, it answers checks one JSON line at a time.

Importing sae_lens (and transformers with it) costs ~5 s of CPU; a Python per check paid that
for every test. Request: {"check": name, "args": [...]}; answer: {"ok", "output", "error"}, where
output is what the check printed and error its traceback (SAELens's own message) if it failed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

import torch
from sae_lens import SAE
from safetensors.torch import load_file


def load(path: str) -> None:
    """A standard SAE: the weights are ours, unchanged, and the forward pass is the same SAE."""
    sae = SAE.load_from_disk(path)
    ours = load_file(path + "/sae_weights.safetensors")
    x = torch.randn(8, ours["W_enc"].shape[0], dtype=ours["W_enc"].dtype)
    f = torch.relu((x - ours["b_dec"]) @ ours["W_enc"] + ours["b_enc"])
    expected = f @ ours["W_dec"] + ours["b_dec"]
    assert type(sae).__name__ == "StandardSAE", type(sae)
    for name in ("W_enc", "b_enc", "W_dec", "b_dec"):
        assert torch.equal(getattr(sae, name).detach(), ours[name]), name
    assert torch.allclose(sae(x).detach(), expected, atol=1e-5), "forward pass differs"
    print("loaded", type(sae).__name__, sae.cfg.d_in, sae.cfg.d_sae)


def load_any(path: str) -> None:
    """Any architecture: SAELens picks its class from cfg.json; the weights must be ours."""
    sae = SAE.load_from_disk(path)
    ours = load_file(path + "/sae_weights.safetensors")
    for name in ("W_enc", "W_dec", "b_dec"):
        assert torch.equal(getattr(sae, name).detach(), ours[name]), name
    print("loaded", type(sae).__name__, sae.cfg.d_in, sae.cfg.d_sae)


def compare(path: str, ref_path: str) -> None:
    """Our parameters, unchanged, and SAELens's encode/decode within 1e-5 of GPUDeck's own
    (ref_path holds x, f and x_hat as GPUDeck's model computed them)."""
    sae = SAE.load_from_disk(path)
    ref = load_file(ref_path)
    ours = load_file(path + "/sae_weights.safetensors")
    names = set(dict(sae.named_parameters()))
    assert names == set(ours), (names, set(ours))
    for name, value in ours.items():
        assert torch.equal(getattr(sae, name).detach(), value), name
    with torch.no_grad():
        f = sae.encode(ref["x"])
        x_hat = sae.decode(f)
    enc = float((f - ref["f"]).abs().max())
    dec = float((x_hat - ref["x_hat"]).abs().max())
    l0 = float((f > 0).sum(-1).float().mean())
    print("loaded", type(sae).__name__, f"encode {enc:.2e} decode {dec:.2e} l0 {l0:.2f}")
    assert enc <= 1e-5 and dec <= 1e-5, (enc, dec)


CHECKS: dict[str, Callable[..., None]] = {"load": load, "load_any": load_any, "compare": compare}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            CHECKS[request["check"]](*request["args"])
    except Exception:
        return {"ok": False, "output": printed.getvalue(), "error": traceback.format_exc()}
    return {"ok": True, "output": printed.getvalue(), "error": ""}


def main() -> None:
    # Answers go to a private copy of stdout, and fd 1 to stderr: nothing that SAELens, torch or
    # a C library writes to stdout can break a line of the protocol.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    for line in sys.stdin:  # until the test process closes stdin (or dies)
        answers.write(json.dumps(answer(json.loads(line))) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
