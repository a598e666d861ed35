"""standard: ReLU latents and an L1 penalty weighted by decoder norms (SAELens's StandardSAE).

l1_loss = mean over the batch of coefficient * sum_j f_j * ||W_dec[j]||
"""

from __future__ import annotations

import torch

from gpudeck.kinds.sae.model import Latents, Sae


class StandardSae(Sae):
    architecture = "standard"
    sae_lens_architecture = "standard"

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.hidden_pre(x))

    def encode_train(
        self, x: torch.Tensor, coefficient: float, dead_mask: torch.Tensor | None
    ) -> tuple[Latents, torch.Tensor, torch.Tensor]:
        hidden_pre = self.hidden_pre_train(x)
        acts = torch.relu(hidden_pre)
        l1 = coefficient * (acts * self.W_dec.norm(dim=1)).sum(dim=-1).mean()
        return Latents(acts), l1, hidden_pre
