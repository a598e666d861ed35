"""The SAE architectures, one module each; `build_sae` makes the one a config names."""

from __future__ import annotations

import torch

from gpudeck.kinds.sae.arch.batchtopk import BatchTopKSae
from gpudeck.kinds.sae.arch.jumprelu import JumpReluSae
from gpudeck.kinds.sae.arch.standard import StandardSae
from gpudeck.kinds.sae.arch.topk import TopKSae
from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.sae.model import Sae

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def build_sae(config: SaeConfig) -> Sae:
    """An uninitialised SAE of the config's architecture (parameters allocated, not set)."""
    dtype = DTYPES[config.dtype]
    d_in, d_sae = config.d_in, config.d_sae
    if config.architecture == "topk":
        return TopKSae(
            d_in,
            d_sae,
            k=config.k,
            aux_k_coefficient=config.aux_k_coefficient,
            sparse_decoder=config.sparse_kernels,
            dtype=dtype,
        )
    if config.architecture == "batchtopk":
        return BatchTopKSae(
            d_in,
            d_sae,
            k=config.k,
            aux_k_coefficient=config.aux_k_coefficient,
            threshold_lr=config.batchtopk_threshold_lr,
            sparse_decoder=config.sparse_kernels,
            dtype=dtype,
        )
    if config.architecture == "jumprelu":
        return JumpReluSae(
            d_in,
            d_sae,
            bandwidth=config.jumprelu_bandwidth,
            init_threshold=config.jumprelu_init_threshold,
            k=config.k,
            warm_up=config.topk_warm_up_length() > 0,
            threshold_lr=config.batchtopk_threshold_lr,
            dtype=dtype,
        )
    return StandardSae(d_in, d_sae, dtype=dtype)


__all__ = ["BatchTopKSae", "JumpReluSae", "StandardSae", "TopKSae", "build_sae"]
