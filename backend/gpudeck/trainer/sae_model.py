"""The standard ReLU sparse autoencoder, with SAELens's parameter names and loss definitions.

f     = relu((x - b_dec) @ W_enc + b_enc)
x_hat = f @ W_dec + b_dec
mse_loss = mean over the batch of sum over d_in of (x_hat - x)^2
l1_loss  = mean over the batch of l1_coefficient * sum_j f_j * ||W_dec[j]||
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn


class SaeOutput(NamedTuple):
    feature_acts: torch.Tensor
    sae_out: torch.Tensor
    mse_loss: torch.Tensor
    l1_loss: torch.Tensor
    loss: torch.Tensor


class SparseAutoencoder(nn.Module):
    def __init__(self, d_in: int, d_sae: int, *, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.d_in = d_in
        self.d_sae = d_sae
        self.W_enc = nn.Parameter(torch.empty(d_in, d_sae, dtype=dtype))
        self.b_enc = nn.Parameter(torch.zeros(d_sae, dtype=dtype))
        self.W_dec = nn.Parameter(torch.empty(d_sae, d_in, dtype=dtype))
        self.b_dec = nn.Parameter(torch.zeros(d_in, dtype=dtype))

    @torch.no_grad()
    def initialize(self, generator: torch.Generator) -> None:
        """Decoder rows of norm 0.1 and the encoder as their transpose (SAELens's default)."""
        w_dec = torch.randn(self.d_sae, self.d_in, generator=generator, dtype=torch.float32)
        w_dec = 0.1 * w_dec / w_dec.norm(dim=1, keepdim=True)
        self.W_dec.copy_(w_dec)
        self.W_enc.copy_(w_dec.T)
        self.b_enc.zero_()
        self.b_dec.zero_()

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu((x - self.b_dec) @ self.W_enc + self.b_enc)

    def forward(self, x: torch.Tensor, l1_coefficient: float) -> SaeOutput:
        feature_acts = self.encode(x)
        sae_out = feature_acts @ self.W_dec + self.b_dec
        mse_loss = (sae_out - x).pow(2).sum(dim=-1).mean()
        decoder_norms = self.W_dec.norm(dim=1)
        l1_loss = l1_coefficient * (feature_acts * decoder_norms).sum(dim=-1).mean()
        return SaeOutput(feature_acts, sae_out, mse_loss, l1_loss, mse_loss + l1_loss)


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: torch.Tensor,
    *,
    l1_coefficient: float,
    grad_clip_norm: float | None = None,
) -> SaeOutput:
    """One optimizer step. The trainer and the memory estimate both trace exactly this."""
    output: SaeOutput = model(batch, l1_coefficient)
    output.loss.backward()
    if grad_clip_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return output
