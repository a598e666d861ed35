"""Device parameters shared by tests that run on the CPU here and on CUDA on the device machine.

A `gpu`-marked case only runs under `pytest -m gpu`, on a machine that should have a GPU: there,
a missing CUDA is a failure that says so, never a skip that would pass unnoticed.
"""

from __future__ import annotations

import pytest
import torch

CPU_AND_CUDA = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.gpu),
]
NO_CUDA = "CUDA is not available: gpu-marked tests must run on a machine with an NVIDIA GPU"


def require_cuda() -> None:
    assert torch.cuda.is_available(), NO_CUDA


def device_for(name: str) -> torch.device:
    """torch.device(name), failing (not skipping) when it is CUDA and there is none."""
    device = torch.device(name)
    if device.type == "cuda":
        require_cuda()
        device = torch.device("cuda", 0)
    return device
