"""topk: the k largest pre-activations of each sample, ReLU'd (Gao et al. 2024).

Decoder rows are kept unit-norm after every step, so the selection needs no rescaling and
SAELens's TopKSAE (rescale_acts_by_decoder_norm false) computes the same encode. Dead latents
are revived by the AuxK loss: the top k_aux = d_in / 2 dead latents reconstruct the residual
x - x_hat (no b_dec), scaled by min(dead / k_aux, 1), as in SAELens and sparsify.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from gpudeck.kinds.sae.model import Latents, Sae, gathered_preact, sparse_decode

if TYPE_CHECKING:
    from gpudeck.kinds.sae.config import SaeConfig


class KSparseSae(Sae):
    """The k-sparse family (topk, batchtopk): k latents a sample on average, unit-norm decoder
    rows, and the AuxK loss reviving dead latents."""

    unit_norm_decoder = True

    def __init__(
        self,
        d_in: int,
        d_sae: int,
        *,
        k: int,
        aux_k_coefficient: float,
        sparse_decoder: bool = True,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__(d_in, d_sae, dtype=dtype)
        self.k = k
        self.aux_k_coefficient = aux_k_coefficient
        self.sparse_decoder = sparse_decoder

    @classmethod
    def config_settings(cls, config: SaeConfig) -> dict[str, Any]:
        k, aux_k = config.k, config.aux_k_coefficient
        return {"k": k, "aux_k_coefficient": aux_k, "sparse_decoder": config.sparse_kernels}

    def aux_loss(
        self,
        x: torch.Tensor,
        sae_out: torch.Tensor,
        hidden_pre: torch.Tensor,
        dead_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        return auxk_loss(self, x, sae_out, hidden_pre, dead_mask, self.aux_k_coefficient)


class TopKSae(KSparseSae):
    architecture = "topk"
    sae_lens_architecture = "topk"
    # With the sparse decoder, the encoder's backward is sparse too (model.gathered_preact).
    # An attribute only so that bench/trainer_throughput.py can time the decoder alone.
    sparse_encoder_backward = True

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        top = torch.topk(self.hidden_pre(x), self.k, dim=-1, sorted=False)
        out = torch.zeros(x.shape[0], self.d_sae, dtype=x.dtype, device=x.device)
        return out.scatter_(-1, top.indices, top.values.relu())

    def encode_train(
        self, x: torch.Tensor, coefficient: float, dead_mask: torch.Tensor | None
    ) -> tuple[Latents, torch.Tensor, torch.Tensor]:
        if self.sparse_decoder and self.sparse_encoder_backward:
            hidden_pre = self.hidden_pre_nograd(x)
            top = torch.topk(hidden_pre, self.k, dim=-1, sorted=False)
            values = gathered_preact(self, x, hidden_pre, top.indices)
            return Latents(values.relu(), top.indices), hidden_pre.new_zeros(()), hidden_pre
        hidden_pre = self.hidden_pre_train(x)
        top = torch.topk(hidden_pre, self.k, dim=-1, sorted=False)
        latents = Latents(top.values.relu(), top.indices)
        if not self.sparse_decoder:
            latents = Latents(latents.dense(self.d_sae))
        return latents, hidden_pre.new_zeros(()), hidden_pre

    def sae_lens_fields(self) -> dict[str, Any]:
        return {"k": self.k, "rescale_acts_by_decoder_norm": False}


def topk_warm_up_latents(sae: Sae, x: torch.Tensor, k: int) -> tuple[Latents, torch.Tensor]:
    """TopK's sparse selection for another architecture's warm-up (SaeConfig.topk_warm_up_steps):
    (latents, pre-activations computed without a graph)."""
    if not has_sparse_kernels(sae):  # bfloat16: the same selection, dense
        hidden_pre = sae.hidden_pre_train(x)
        top = torch.topk(hidden_pre, k, dim=-1, sorted=False)
        return Latents(
            torch.zeros_like(hidden_pre).scatter(1, top.indices, top.values.relu())
        ), hidden_pre
    hidden_pre = sae.hidden_pre_nograd(x)
    top = torch.topk(hidden_pre, k, dim=-1, sorted=False)
    values = gathered_preact(sae, x, hidden_pre, top.indices)
    return Latents(values.relu(), top.indices), hidden_pre


def has_sparse_kernels(sae: Sae) -> bool:
    """SaeConfig.sparse_kernels for a built model: the sparse kernels exist in float32 only."""
    return sae.W_enc.dtype == torch.float32


def auxk_loss(
    sae: Sae,
    x: torch.Tensor,
    sae_out: torch.Tensor,
    hidden_pre: torch.Tensor,
    dead_mask: torch.Tensor | None,
    coefficient: float,
) -> torch.Tensor:
    """Gao et al.'s AuxK: the top dead latents predict what the live ones left unexplained.

    `dead_mask` is the same on every rank (the trainer all-reduces firing), so the scale and
    the loss are what one rank with the whole batch computes. The trainer passes None when no
    latent is dead, which skips the work. As in SAELens, the dead latents' pre-activations are
    used raw (not ReLU'd), so a latent whose pre-activation is negative still gets gradient.
    """
    if dead_mask is None or coefficient == 0:
        return sae_out.new_zeros(())
    # No host sync (and traceable on fake tensors): k_aux is fixed and, when fewer latents are
    # dead, the live ones picked to fill it get weight 0: the same reconstruction as taking
    # only min(k_aux, dead) latents. The scale min(dead / k_aux, 1) stays a tensor.
    k_aux = min(max(1, sae.d_in // 2), sae.d_sae)
    scale = (dead_mask.sum() / k_aux).clamp(max=1.0).to(sae_out.dtype)
    residual = (x - sae_out).detach()
    masked = torch.where(dead_mask[None], hidden_pre.detach(), -torch.inf)
    indices = masked.topk(k_aux, dim=-1, sorted=False).indices
    if hidden_pre.requires_grad:
        values = hidden_pre.gather(1, indices)
    else:  # the sparse path computed hidden_pre without a graph
        values = gathered_preact(sae, x, hidden_pre, indices)
    values = values * dead_mask[indices].to(hidden_pre.dtype)
    if has_sparse_kernels(sae):
        recons = sparse_decode(values, indices, sae.W_dec)
    else:  # bfloat16: SAELens's dense decode of the scattered values
        recons = torch.zeros_like(hidden_pre).scatter(1, indices, values) @ sae.W_dec
    return coefficient * scale * (recons - residual).pow(2).sum(dim=-1).mean()
