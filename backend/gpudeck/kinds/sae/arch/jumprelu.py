"""jumprelu: a learned threshold per latent, trained through a straight-through estimator with
a rectangle kernel of width `bandwidth`, and an L0 penalty (Rajamanoharan et al. 2024; SAELens's
JumpReLUTrainingSAE in its default "step" mode: the STE passes gradient to the threshold only).

f_j     = h_j * [h_j > theta_j]        h = pre-activations
l0_loss = mean over the batch of coefficient * sum_j [h_j > theta_j]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist
from torch import nn

from gpudeck.kinds.sae.arch.batchtopk import global_kth_largest
from gpudeck.kinds.sae.arch.topk import topk_warm_up_latents
from gpudeck.kinds.sae.model import Latents, Sae

if TYPE_CHECKING:
    from gpudeck.kinds.sae.config import SaeConfig


def _rectangle(x: torch.Tensor) -> torch.Tensor:
    return ((x > -0.5) & (x < 0.5)).to(x)


class _ThresholdFunction(torch.autograd.Function):
    """forward(x, threshold, bandwidth): what backward needs is the same for both gates."""

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        x, threshold, bandwidth = inputs
        ctx.save_for_backward(x, threshold)
        ctx.bandwidth = bandwidth


class _Step(_ThresholdFunction):
    @staticmethod
    def forward(x: torch.Tensor, threshold: torch.Tensor, bandwidth: float) -> torch.Tensor:
        return (x > threshold).to(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[Any, ...]:
        x, threshold = ctx.saved_tensors
        bandwidth = ctx.bandwidth
        grad = -(1.0 / bandwidth) * _rectangle((x - threshold) / bandwidth) * grad_output
        return None, grad.sum(dim=0), None


class _JumpReLU(_ThresholdFunction):
    @staticmethod
    def forward(x: torch.Tensor, threshold: torch.Tensor, bandwidth: float) -> torch.Tensor:
        return (x * (x > threshold)).to(x)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[Any, ...]:
        x, threshold = ctx.saved_tensors
        bandwidth = ctx.bandwidth
        ste = -(threshold / bandwidth) * _rectangle((x - threshold) / bandwidth) * grad_output
        return (x > threshold) * grad_output, ste.sum(dim=0), None


class JumpReluSae(Sae):
    """With a TopK warm-up (`warm_up`), the first steps train as TopK with `k` (unit-norm
    decoder rows at init, as TopK's); the running k x B-th largest pre-activation (EMA at
    `threshold_lr`, as BatchTopK's) then becomes every latent's starting threshold."""

    architecture = "jumprelu"
    sae_lens_architecture = "jumprelu"

    running_threshold: torch.Tensor

    def __init__(
        self,
        d_in: int,
        d_sae: int,
        *,
        bandwidth: float,
        init_threshold: float,
        k: int = 1,
        warm_up: bool = False,
        threshold_lr: float = 0.01,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__(d_in, d_sae, dtype=dtype)
        self.bandwidth = bandwidth
        self.init_threshold = init_threshold
        self.k = k
        self.warm_up = warm_up
        self.threshold_lr = threshold_lr
        self.threshold = nn.Parameter(torch.full((d_sae,), init_threshold, dtype=dtype))
        # float64: an EMA of small steps rounds away in lower precision (as BatchTopK's).
        self.register_buffer("running_threshold", torch.zeros((), dtype=torch.float64))

    @classmethod
    def config_settings(cls, config: SaeConfig) -> dict[str, Any]:
        return {
            "bandwidth": config.jumprelu_bandwidth,
            "init_threshold": config.jumprelu_init_threshold,
            "k": config.k,
            "warm_up": config.topk_warm_up_length() > 0,
            "threshold_lr": config.batchtopk_threshold_lr,
        }

    def decoder_init_norm(self) -> float:
        return 1.0 if self.warm_up else 0.1

    @torch.no_grad()
    def end_topk_warm_up(self) -> None:
        self.threshold.fill_(float(self.running_threshold))

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
        if self.topk_warm_up:
            return self._warm_up_encode(x)
        with torch.no_grad():
            # Below zero the gate would pass negative pre-activations; projected on the data
            # (not clamped in the graph) so a threshold at zero still gets gradient (SAELens).
            self.threshold.clamp_(min=0.0)
        hidden_pre = self.hidden_pre_train(x)
        acts = _JumpReLU.apply(hidden_pre, self.threshold, self.bandwidth)
        l0 = _Step.apply(hidden_pre, self.threshold, self.bandwidth).sum(dim=-1)
        return Latents(acts), coefficient * l0.mean(), hidden_pre

    def _warm_up_encode(self, x: torch.Tensor) -> tuple[Latents, torch.Tensor, torch.Tensor]:
        latents, hidden_pre = topk_warm_up_latents(self, x, self.k)
        world = dist.get_world_size() if dist.is_initialized() else 1
        kth = global_kth_largest(hidden_pre.relu(), self.k * x.shape[0] * world).double()
        with torch.no_grad():
            if self.training:
                lr = self.threshold_lr
                moved = (1 - lr) * self.running_threshold + lr * kth
                # The first step starts the average at its value (no host sync: a where).
                fresh = self.running_threshold == 0
                self.running_threshold.copy_(torch.where(fresh, kth, moved))
        # The threshold takes no part in TopK; a zero term keeps it in the graph, as DDP
        # requires every parameter to get a gradient.
        return latents, 0 * self.threshold.sum(), hidden_pre
