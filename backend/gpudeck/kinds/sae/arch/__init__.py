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

# The architecture a config names -> its class; a new architecture is a module and a name here.
SAE_CLASSES: dict[str, type[Sae]] = {
    sae.architecture: sae for sae in (StandardSae, TopKSae, BatchTopKSae, JumpReluSae)
}


def build_sae(config: SaeConfig) -> Sae:
    """An uninitialised SAE of the config's architecture (parameters allocated, not set)."""
    sae_class = SAE_CLASSES[config.architecture]
    settings = sae_class.config_settings(config)
    return sae_class(config.d_in, config.d_sae, dtype=DTYPES[config.dtype], **settings)


__all__ = ["SAE_CLASSES", "BatchTopKSae", "JumpReluSae", "StandardSae", "TopKSae", "build_sae"]
