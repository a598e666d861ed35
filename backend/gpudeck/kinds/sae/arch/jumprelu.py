"""jumprelu: a learned threshold per latent, trained through a straight-through estimator with
a rectangle kernel of width `bandwidth`, and an L0 penalty (Rajamanoharan et al. 2024; SAELens's
JumpReLUTrainingSAE in its default "step" mode: the STE passes gradient to the threshold only).

f_j     = h_j * [h_j > theta_j]        h = pre-activations
l0_loss = mean over the batch of coefficient * sum_j [h_j > theta_j]
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from gpudeck.kinds.sae.model import Latents, Sae


def _rectangle(x: torch.Tensor) -> torch.Tensor:
    return ((x > -0.5) & (x < 0.5)).to(x)


class _Step(torch.autograd.Function):
    @staticmethod
    def forward(x: torch.Tensor, threshold: torch.Tensor, bandwidth: float) -> torch.Tensor:
        return (x > threshold).to(x)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        x, threshold, bandwidth = inputs
        ctx.save_for_backward(x, threshold)
        ctx.bandwidth = bandwidth

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[Any, ...]:
        x, threshold = ctx.saved_tensors
        bandwidth = ctx.bandwidth
        grad = -(1.0 / bandwidth) * _rectangle((x - threshold) / bandwidth) * grad_output
        return None, grad.sum(dim=0), None


class _JumpReLU(torch.autograd.Function):
    @staticmethod
    def forward(x: torch.Tensor, threshold: torch.Tensor, bandwidth: float) -> torch.Tensor:
        return (x * (x > threshold)).to(x)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        x, threshold, bandwidth = inputs
        ctx.save_for_backward(x, threshold)
        ctx.bandwidth = bandwidth

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[Any, ...]:
        x, threshold = ctx.saved_tensors
        bandwidth = ctx.bandwidth
        ste = -(threshold / bandwidth) * _rectangle((x - threshold) / bandwidth) * grad_output
        return (x > threshold) * grad_output, ste.sum(dim=0), None


class JumpReluSae(Sae):
    architecture = "jumprelu"
    sae_lens_architecture = "jumprelu"

    def __init__(
        self,
        d_in: int,
        d_sae: int,
        *,
        bandwidth: float,
        init_threshold: float,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__(d_in, d_sae, dtype=dtype)
        self.bandwidth = bandwidth
        self.init_threshold = init_threshold
        self.threshold = nn.Parameter(torch.full((d_sae,), init_threshold, dtype=dtype))

    @torch.no_grad()
    def initialize(self, generator: torch.Generator, b_dec: torch.Tensor | None = None) -> None:
        super().initialize(generator, b_dec)
        self.threshold.fill_(self.init_threshold)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """SAELens's JumpReLUSAE.encode."""
        hidden_pre = self.hidden_pre(x)
        return torch.relu(hidden_pre) * (hidden_pre > self.threshold).to(hidden_pre.dtype)

    def encode_train(
        self, x: torch.Tensor, coefficient: float, dead_mask: torch.Tensor | None
    ) -> tuple[Latents, torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            # Below zero the gate would pass negative pre-activations; projected on the data
            # (not clamped in the graph) so a threshold at zero still gets gradient (SAELens).
            self.threshold.clamp_(min=0.0)
        hidden_pre = self.hidden_pre_train(x)
        acts = _JumpReLU.apply(hidden_pre, self.threshold, self.bandwidth)
        l0 = _Step.apply(hidden_pre, self.threshold, self.bandwidth).sum(dim=-1)
        return Latents(acts), coefficient * l0.mean(), hidden_pre
