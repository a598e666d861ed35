"""build_sae: the config's architecture, with the config's settings, for every architecture
and dtype the form offers."""

from __future__ import annotations

import itertools
from typing import get_args

import pytest
import torch

from gpudeck.kinds.sae.arch import BatchTopKSae, JumpReluSae, TopKSae, build_sae
from gpudeck.kinds.sae.config import Architecture, SaeConfig, SyntheticDataset

DTYPES = get_args(SaeConfig.model_fields["dtype"].annotation)


def _config(architecture: str, dtype: str, **overrides: object) -> SaeConfig:
    # Values unlike the defaults, so a setting read from the wrong field shows.
    return SaeConfig.model_validate(
        {
            "architecture": architecture,
            "dtype": dtype,
            "d_in": 16,
            "d_sae": 48,
            "k": 7,
            "aux_k_coefficient": 0.25,
            "batchtopk_threshold_lr": 0.003,
            "jumprelu_bandwidth": 0.02,
            "jumprelu_init_threshold": 0.04,
            "dataset": SyntheticDataset(num_features=48, active_features=3),
        }
        | overrides
    )


@pytest.mark.parametrize(
    ("architecture", "dtype"), list(itertools.product(get_args(Architecture), DTYPES))
)
def test_builds_the_named_architecture_in_the_named_dtype(architecture: str, dtype: str) -> None:
    sae = build_sae(_config(architecture, dtype))
    assert sae.architecture == architecture
    assert sae.W_enc.shape == (16, 48) and sae.W_dec.shape == (48, 16)
    assert sae.W_enc.dtype == getattr(torch, dtype)


@pytest.mark.parametrize("architecture", ["topk", "batchtopk"])
def test_the_k_sparse_family_takes_k_auxk_and_the_sparse_kernels(architecture: str) -> None:
    for dtype in DTYPES:
        config = _config(architecture, dtype)
        sae = build_sae(config)
        assert isinstance(sae, TopKSae | BatchTopKSae)
        assert (sae.k, sae.aux_k_coefficient) == (7, 0.25)
        assert sae.sparse_decoder == config.sparse_kernels


def test_batchtopk_takes_its_threshold_rate() -> None:
    sae = build_sae(_config("batchtopk", "float32"))
    assert isinstance(sae, BatchTopKSae) and sae.threshold_lr == 0.003


@pytest.mark.parametrize(("warm_up_steps", "warm_up"), [(0, False), (20, True)])
def test_jumprelu_takes_its_kernel_threshold_and_warm_up(warm_up_steps: int, warm_up: bool) -> None:
    sae = build_sae(_config("jumprelu", "float32", topk_warm_up_steps=warm_up_steps))
    assert isinstance(sae, JumpReluSae)
    assert (sae.bandwidth, sae.init_threshold, sae.k, sae.threshold_lr) == (0.02, 0.04, 7, 0.003)
    assert sae.warm_up is warm_up
    assert torch.equal(sae.threshold.detach(), torch.full((48,), 0.04))
