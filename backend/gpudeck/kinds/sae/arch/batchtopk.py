"""batchtopk: the k x B largest ReLU'd pre-activations over the whole batch (Bussmann et al.).

The top-k is GLOBAL across DDP ranks: each rank offers its own k x B_global largest values,
an all-gather collects them and every rank keeps what is at or above the (k x B_global)-th
largest, so N ranks with B/N each select exactly what one rank with B does. That threshold's
running average (SAELens's topk_threshold, rate batchtopk_threshold_lr) is what inference uses:
the model is saved as a JumpReLU SAE with that threshold on every latent, as SAELens saves it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from gpudeck.kinds.sae.arch.topk import KSparseSae, topk_warm_up_latents
from gpudeck.kinds.sae.model import Latents, gathered_preact

if TYPE_CHECKING:
    from gpudeck.kinds.sae.config import SaeConfig


def global_kth_largest(values: torch.Tensor, count: int) -> torch.Tensor:
    """The `count`-th largest of `values` gathered over all ranks (every rank gets it)."""
    local = torch.topk(values.flatten(), min(count, values.numel()), sorted=False).values
    return kth_of_local_tops(local, count)


def kth_of_local_tops(local: torch.Tensor, count: int) -> torch.Tensor:
    """The `count`-th largest over all ranks, given each rank's own `count` largest."""
    if dist.is_initialized() and dist.get_world_size() > 1:
        gathered = [torch.empty_like(local) for _ in range(dist.get_world_size())]
        dist.all_gather(gathered, local.contiguous())
        local = torch.cat(gathered)
    return torch.topk(local, min(count, local.numel()), sorted=False).values.min()


class BatchTopKSae(KSparseSae):
    architecture = "batchtopk"
    sae_lens_architecture = "jumprelu"

    topk_threshold: torch.Tensor

    def __init__(self, d_in: int, d_sae: int, *, threshold_lr: float, **k_sparse: Any) -> None:
        """`k_sparse`: KSparseSae's settings (k, aux_k_coefficient, sparse_decoder, dtype)."""
        super().__init__(d_in, d_sae, **k_sparse)
        self.threshold_lr = threshold_lr
        # float64 as SAELens keeps it: an EMA of small steps rounds away in lower precision.
        self.register_buffer("topk_threshold", torch.zeros((), dtype=torch.float64))

    @classmethod
    def config_settings(cls, config: SaeConfig) -> dict[str, Any]:
        return super().config_settings(config) | {"threshold_lr": config.batchtopk_threshold_lr}

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """SAELens's JumpReLUSAE.encode with the running threshold."""
        hidden_pre = self.hidden_pre(x)
        threshold = self.topk_threshold.to(hidden_pre.dtype)
        return torch.relu(hidden_pre) * (hidden_pre > threshold).to(hidden_pre.dtype)

    def firing_threshold(self) -> torch.Tensor:
        # A latent the batch's top k x B picks only below the running threshold is silent once
        # saved: on the toy of test_default_quality, 5 of 64 latents fired in every training
        # window yet on no held-out row; counted dead, AuxK revives them (with AuxK at 1,
        # seed 12: 9.4 -> 1.6 % dead; either change alone left 9.4 and 4.7 %).
        return self.topk_threshold

    @torch.no_grad()
    def _update_threshold(self, kth: torch.Tensor) -> None:
        if self.training:  # no host sync: a where, not an if
            lr = self.threshold_lr
            moved = (1 - lr) * self.topk_threshold + lr * kth.double()
            self.topk_threshold.copy_(torch.where(kth > 0, moved, self.topk_threshold))

    def encode_train(
        self, x: torch.Tensor, coefficient: float, dead_mask: torch.Tensor | None
    ) -> tuple[Latents, torch.Tensor, torch.Tensor]:
        world = dist.get_world_size() if dist.is_initialized() else 1
        count = self.k * x.shape[0] * world
        if self.topk_warm_up:
            # Per-sample TopK; the running threshold follows the batch's k x B-th largest all
            # along, so inference (and the switch) has it settled.
            latents, hidden_pre = topk_warm_up_latents(self, x, self.k)
            self._update_threshold(global_kth_largest(hidden_pre.relu(), count))
            return latents, hidden_pre.new_zeros(()), hidden_pre
        if self.sparse_decoder:
            return self._encode_sparse(x, count)
        hidden_pre = self.hidden_pre_train(x)
        acts = torch.relu(hidden_pre)
        kth = global_kth_largest(acts.detach(), count)
        self._update_threshold(kth)
        acts = acts * (acts >= kth).to(acts.dtype)
        return Latents(acts), hidden_pre.new_zeros(()), hidden_pre

    def _encode_sparse(
        self, x: torch.Tensor, count: int
    ) -> tuple[Latents, torch.Tensor, torch.Tensor]:
        """The same selection as entries: this rank's `count` largest of the flattened batch
        (a fixed number, so no host sync), of which those at or above the global k-th are
        kept (the others get value 0). Sorted by position, so by sample, for embedding_bag's
        offsets; the gradient reaches only these entries (model.gathered_preact)."""
        hidden_pre = self.hidden_pre_nograd(x)
        batch = x.shape[0]
        top = torch.topk(hidden_pre.relu().flatten(), min(count, hidden_pre.numel()), sorted=False)
        kth = kth_of_local_tops(top.values, count)
        self._update_threshold(kth)
        flat = top.indices.sort().values
        samples, latents = flat // self.d_sae, flat % self.d_sae
        offsets = torch.searchsorted(samples, torch.arange(batch + 1, device=x.device))
        values = gathered_preact(self, x, hidden_pre, latents, samples).relu()
        values = values * (hidden_pre[samples, latents] >= kth).to(values.dtype)
        return Latents(values, latents, offsets), hidden_pre.new_zeros(()), hidden_pre

    def export_weights(self, scale: float) -> dict[str, torch.Tensor]:
        weights = super().export_weights(scale)
        # hidden_pre is unchanged by the scale fold, so the threshold needs none.
        weights["threshold"] = torch.full_like(self.b_enc.detach(), float(self.topk_threshold))
        return weights

    @torch.no_grad()
    def load_exported(self, weights: dict[str, torch.Tensor], scale: float) -> None:
        weights = dict(weights)
        threshold = weights.pop("threshold")
        super().load_exported(weights, scale)
        self.topk_threshold.fill_(float(threshold[0]))

    def sae_lens_fields(self) -> dict[str, Any]:
        return {}
