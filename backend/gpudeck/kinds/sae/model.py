"""What every SAE architecture shares: SAELens's parameter names, the step, the export.

Each architecture (gpudeck.kinds.sae.arch.*) is an `Sae` subclass that defines `encode_train`
(latents and losses for a batch) and `encode` (inference, exactly as SAELens's class of the
same architecture computes it). The shared part here:

x_hat    = f @ W_dec + b_dec    (f sparse: `Latents`, decoded densely or by a gather)
mse_loss = mean over the batch of sum over d_in of (x_hat - x)^2

Training runs on inputs multiplied by `scale` (activation normalisation, a power of 2); the
saved weights have it folded in (W_enc * scale, W_dec / scale, b_dec / scale), exactly, so
SAELens computes on raw activations what we trained on scaled ones.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn
from torch._subclasses.fake_tensor import FakeTensor

if TYPE_CHECKING:
    from gpudeck.kinds.sae.config import SaeConfig


class Latents(NamedTuple):
    """Feature activations: dense [B, d_sae] (indices None), the k active of each sample
    (values and indices [B, k]), or a variable number per sample (BatchTopK: values and
    indices [m], sorted by sample, sample b's entries at offsets[b]:offsets[b + 1]). A zero
    value is an inactive slot."""

    values: torch.Tensor
    indices: torch.Tensor | None = None
    offsets: torch.Tensor | None = None

    def dense(self, d_sae: int) -> torch.Tensor:
        if self.indices is None:
            return self.values
        if self.offsets is not None:
            batch = self.offsets.numel() - 1
            samples = torch.repeat_interleave(
                torch.arange(batch, device=self.values.device), self.offsets.diff()
            )
            out = self.values.new_zeros(batch, d_sae)
            return out.index_put_((samples, self.indices), self.values, accumulate=True)
        out = self.values.new_zeros(self.values.shape[0], d_sae)
        return out.scatter_(1, self.indices, self.values)

    def fired(self, d_sae: int) -> torch.Tensor:
        """bool[d_sae]: which latents were active for any sample of the batch."""
        if self.indices is None:
            return (self.values > 0).any(dim=0)
        fired = torch.zeros(d_sae, dtype=torch.bool, device=self.values.device)
        return fired.index_fill_(0, self.indices[self.values > 0], True)

    def fire_counts(self, d_sae: int, above: torch.Tensor | None = None) -> torch.Tensor:
        """float64[d_sae]: on how many samples of the batch each latent was active (its value
        above `above` when given, else above 0)."""
        floor = 0 if above is None else above.to(self.values.dtype)
        active = (self.values > floor).to(torch.float64)
        if self.indices is None:
            return active.sum(dim=0)
        counts = torch.zeros(d_sae, dtype=torch.float64, device=self.values.device)
        return counts.index_add_(0, self.indices.flatten(), active.flatten())

    def active_count(self) -> torch.Tensor:
        return (self.values > 0).sum()


class SaeOutput(NamedTuple):
    latents: Latents
    sae_out: torch.Tensor
    mse_loss: torch.Tensor
    sparsity_loss: torch.Tensor  # l1_loss (standard), l0_loss (jumprelu), 0 (topk family)
    aux_loss: torch.Tensor  # AuxK (topk family), 0 otherwise
    loss: torch.Tensor


def sparse_decode(values: torch.Tensor, indices: torch.Tensor, w_dec: torch.Tensor) -> torch.Tensor:
    """sum_j values[b, j] * W_dec[indices[b, j]]: the k-row gather instead of a dense matmul.

    embedding_bag computes it in one kernel and has the matching sparse backward: the
    gradient of W_dec is scattered into the k rows per sample, that of the values is the
    dot product of the output gradient with those rows.
    """
    return F.embedding_bag(indices, w_dec, per_sample_weights=values, mode="sum")


def scatter_rows(
    indices: torch.Tensor,
    weights: torch.Tensor,
    rows: torch.Tensor,
    num_rows: int,
    samples: torch.Tensor | None = None,
) -> torch.Tensor:
    """out[j] = sum over (b, s) with indices[b, s] == j of weights[b, s] * rows[b]: [num_rows, d].

    The transpose of a gather, as one CSR [num_rows, B] x dense [B, d] product: the entries
    are sorted by latent once and each output row sums its own, in a fixed order (deterministic,
    unlike index_add_'s atomics on CUDA) and without materialising the [B * n, d] products an
    index_add_ needs (268 MB at the benchmark's shape). `indices` is [B, n] (entry (b, s) uses
    rows[b]), or flat [m] with `samples` [m] naming the row of each entry.
    """
    flat = indices.flatten()
    sorted_flat, order = flat.sort()
    crow = torch.searchsorted(sorted_flat, torch.arange(num_rows + 1, device=flat.device))
    col = order // indices.shape[1] if samples is None else samples.flatten()[order]
    vals = weights.flatten()[order]
    if isinstance(rows, FakeTensor):
        # The memory trace: sparse CSR has no fake kernel; the product's only allocation
        # is its output (the CSR matrix references crow, col and vals above).
        return rows.new_zeros(num_rows, rows.shape[1])
    with warnings.catch_warnings():  # "sparse CSR support is in beta", once per process
        warnings.simplefilter("ignore", UserWarning)
        matrix = torch.sparse_csr_tensor(crow, col, vals, (num_rows, rows.shape[0]))
    return matrix @ rows


class _GatheredPreact(torch.autograd.Function):
    """hidden_pre[b, indices[b, s]] with the sparse gradient of
    hidden_pre = x @ W_enc - b_dec @ W_enc + b_enc.

    The forward receives the gathered values (hidden_pre was computed without a graph, for the
    top-k selection). Only those entries get gradient, so the backward never forms the dense
    [B, d_sae] gradient of hidden_pre: W_enc's gradient is a scatter of n rows of x per sample
    (B * n * d_in multiply-adds instead of the B * d_sae * d_in of x^T @ grad), b_enc's is the
    per-latent sum of the entries, b_dec's follows from it.
    """

    @staticmethod
    def forward(
        values: torch.Tensor,
        x: torch.Tensor,
        w_enc: torch.Tensor,
        b_enc: torch.Tensor,
        b_dec: torch.Tensor,
        indices: torch.Tensor,
        samples: torch.Tensor | None,
    ) -> torch.Tensor:
        return values.clone()

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        _, x, w_enc, _, b_dec, indices, samples = inputs
        ctx.save_for_backward(x, w_enc, b_dec, indices, samples)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        x, w_enc, b_dec, indices, samples = ctx.saved_tensors
        d_in, d_sae = w_enc.shape
        # One product gives both x's scatter and the per-latent sum (the column of ones).
        with_ones = torch.cat([x, x.new_ones(len(x), 1)], 1)
        scattered = scatter_rows(indices, grad, with_ones, d_sae, samples)
        grad_b_enc = scattered[:, d_in]
        grad_w_enc = (scattered[:, :d_in] - grad_b_enc[:, None] * b_dec).t().contiguous()
        grad_b_dec = -(w_enc @ grad_b_enc)
        grad_x = None
        if ctx.needs_input_grad[1]:
            if samples is not None:
                raise NotImplementedError("the flat form gives no gradient to the input")
            grad_x = sparse_decode(grad, indices, w_enc.t().contiguous())
        return None, grad_x, grad_w_enc, grad_b_enc, grad_b_dec, None, None


def gathered_preact(
    sae: Sae,
    x: torch.Tensor,
    hidden_pre: torch.Tensor,
    indices: torch.Tensor,
    samples: torch.Tensor | None = None,
) -> torch.Tensor:
    """hidden_pre.gather(1, indices) ([B, n]), or hidden_pre[samples, indices] (flat), made
    differentiable with the sparse backward above; `hidden_pre` is `sae.hidden_pre_nograd(x)`."""
    values = hidden_pre.gather(1, indices) if samples is None else hidden_pre[samples, indices]
    return _GatheredPreact.apply(values, x, sae.W_enc, sae.b_enc, sae.b_dec, indices, samples)


class Sae(nn.Module):
    """W_enc [d_in, d_sae], b_enc, W_dec [d_sae, d_in], b_dec: SAELens's names and layout."""

    architecture: str = ""
    sae_lens_architecture: str = ""  # what cfg.json says (BatchTopK saves as JumpReLU)
    unit_norm_decoder = False
    # SaeConfig.topk_warm_up_steps (batchtopk, jumprelu): while True, encode_train selects the
    # k largest pre-activations of each sample. The trainer sets it from the step, so resume
    # needs no state for it.
    topk_warm_up = False

    def __init__(self, d_in: int, d_sae: int, *, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.d_in = d_in
        self.d_sae = d_sae
        self.W_enc = nn.Parameter(torch.empty(d_in, d_sae, dtype=dtype))
        self.b_enc = nn.Parameter(torch.zeros(d_sae, dtype=dtype))
        self.W_dec = nn.Parameter(torch.empty(d_sae, d_in, dtype=dtype))
        self.b_dec = nn.Parameter(torch.zeros(d_in, dtype=dtype))

    @torch.no_grad()
    def initialize(self, generator: torch.Generator, b_dec: torch.Tensor | None = None) -> None:
        """Random decoder rows (norm 0.1, or 1 when the decoder is kept unit-norm), the encoder
        as their transpose (SAELens's and Gao et al.'s init), b_dec as given or zero."""
        w_dec = torch.randn(self.d_sae, self.d_in, generator=generator, dtype=torch.float32)
        w_dec = self.decoder_init_norm() * w_dec / w_dec.norm(dim=1, keepdim=True)
        self.W_dec.copy_(w_dec)
        self.W_enc.copy_(w_dec.T)
        self.b_enc.zero_()
        if b_dec is None:
            self.b_dec.zero_()
        else:
            self.b_dec.copy_(b_dec)

    @classmethod
    def config_settings(cls, config: SaeConfig) -> dict[str, Any]:
        """The constructor's keywords read from the config, besides d_in, d_sae and dtype
        (build_sae): each architecture names the fields it takes."""
        return {}

    def firing_threshold(self) -> torch.Tensor | None:
        """The value a latent must exceed to fire in the saved model's encode, where training
        selects by another rule (BatchTopK: the running threshold); None: above 0. The trainer
        counts a latent alive by it, so AuxK revives what would be dead once saved."""
        return None

    def decoder_init_norm(self) -> float:
        return 1.0 if self.unit_norm_decoder else 0.1

    @torch.no_grad()
    def end_topk_warm_up(self) -> None:
        """Called once, before the first step after the TopK warm-up."""

    def hidden_pre(self, x: torch.Tensor) -> torch.Tensor:
        """Pre-activations exactly as SAELens computes them (inference)."""
        return (x - self.b_dec) @ self.W_enc + self.b_enc

    def hidden_pre_train(self, x: torch.Tensor) -> torch.Tensor:
        """The same value for training, written so that b_dec's gradient through the encoder
        costs a [d_sae] x [d_sae, d_in] product instead of a [B, d_sae] x [d_sae, d_in] one:
        with (x - b_dec) @ W_enc autograd computes the gradient of the whole input matrix just
        to sum it for b_dec, a third batch-sized matmul in the encoder's backward."""
        return x @ self.W_enc - self.b_dec @ self.W_enc + self.b_enc

    @torch.no_grad()
    def hidden_pre_nograd(self, x: torch.Tensor) -> torch.Tensor:
        """The training pre-activations without a graph, in one fused product (the sparse
        backward, `gathered_preact`, supplies the gradient of the entries used)."""
        return torch.addmm(self.b_enc - self.b_dec @ self.W_enc, x, self.W_enc)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Inference feature activations, dense, as SAELens's class computes them."""
        raise NotImplementedError

    def decode_latents(self, latents: Latents) -> torch.Tensor:
        if latents.indices is None:
            return latents.values @ self.W_dec + self.b_dec
        if latents.offsets is not None:
            return (
                F.embedding_bag(
                    latents.indices,
                    self.W_dec,
                    latents.offsets,
                    mode="sum",
                    per_sample_weights=latents.values,
                    include_last_offset=True,
                )
                + self.b_dec
            )
        return sparse_decode(latents.values, latents.indices, self.W_dec) + self.b_dec

    def decode(self, feature_acts: torch.Tensor) -> torch.Tensor:
        return feature_acts @ self.W_dec + self.b_dec

    def encode_train(
        self, x: torch.Tensor, coefficient: float, dead_mask: torch.Tensor | None
    ) -> tuple[Latents, torch.Tensor, torch.Tensor]:
        """(latents, sparsity loss, pre-activations) of a training batch."""
        raise NotImplementedError

    def aux_loss(
        self,
        x: torch.Tensor,
        sae_out: torch.Tensor,
        hidden_pre: torch.Tensor,
        dead_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        return sae_out.new_zeros(())

    def forward(
        self, x: torch.Tensor, coefficient: float, dead_mask: torch.Tensor | None = None
    ) -> SaeOutput:
        latents, sparsity_loss, hidden_pre = self.encode_train(x, coefficient, dead_mask)
        sae_out = self.decode_latents(latents)
        mse_loss = (sae_out - x).pow(2).sum(dim=-1).mean()
        aux = self.aux_loss(x, sae_out, hidden_pre, dead_mask)
        return SaeOutput(
            latents, sae_out, mse_loss, sparsity_loss, aux, mse_loss + sparsity_loss + aux
        )

    @torch.no_grad()
    def after_step(self) -> None:
        """Constraints re-applied after each optimizer step (unit-norm decoder rows)."""
        if self.unit_norm_decoder:
            self.W_dec.div_(self.W_dec.norm(dim=1, keepdim=True).clamp_min(1e-12))

    # --- export: SAELens's inference layout, the activation scale folded in ---------------

    def sae_lens_fields(self) -> dict[str, Any]:
        """Architecture-specific cfg.json fields."""
        return {}

    def export_weights(self, scale: float) -> dict[str, torch.Tensor]:
        w = {name: p.detach() for name, p in self.named_parameters()}
        return {
            **w,
            "W_enc": w["W_enc"] * scale,
            "W_dec": w["W_dec"] / scale,
            "b_dec": w["b_dec"] / scale,
        }

    @torch.no_grad()
    def load_exported(self, weights: dict[str, torch.Tensor], scale: float) -> None:
        """Inverse of export_weights (exact: scale is a power of 2)."""
        device = self.W_enc.device
        for name, p in self.named_parameters():
            p.copy_(weights[name].to(device))
        self.W_enc.div_(scale)
        self.W_dec.mul_(scale)
        self.b_dec.mul_(scale)


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: torch.Tensor,
    *,
    coefficient: float,
    grad_clip_norm: float | None = None,
    dead_mask: torch.Tensor | None = None,
) -> SaeOutput:
    """One optimizer step. The trainer and the memory estimate both trace exactly this."""
    output: SaeOutput = model(batch, coefficient, dead_mask)
    output.loss.backward()
    if grad_clip_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    sae = getattr(model, "module", model)  # the DDP wrapper's module
    assert isinstance(sae, Sae)
    sae.after_step()
    return output
