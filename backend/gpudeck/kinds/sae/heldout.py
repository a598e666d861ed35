"""Held-out evaluation: rows kept out of training, scored at every checkpoint with the SAE as
it is saved (its inference `encode`, what SAELens computes after loading the checkpoint).

The training-window count (`dead_features`: latents that fired on no training sample of the
last 1,000 steps) misses latents that fire too rarely to matter but often enough for some
batch; users mean by "dead" a latent that fires on no row of data it was not trained on, as
SAELens's eval batches count it. That is `heldout_dead_pct` here.

Synthetic data: the held-out rows are the samples after `num_samples` (the same generator,
never trained on). A file: its last rows (up to HELDOUT_ROWS, at most 1 in 20), which the
training loader then never reads; none when what is left would not fill a batch.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensor

from gpudeck.kinds.sae.data import RowSource, SyntheticSource
from gpudeck.kinds.sae.model import Sae

HELDOUT_ROWS = 16_384
HELDOUT_SHARE_OF_FILE = 20  # a file gives at most 1 row in this many
RECOVERED_COSINE = 0.9  # a true feature is recovered when a decoder row is this close


class RowRange:
    """Rows [start, start + count) of another source, as a source of `count` rows."""

    def __init__(self, source: RowSource, start: int, count: int) -> None:
        self.source, self.start, self.count = source, start, count
        self.shuffle = source.shuffle

    def __len__(self) -> int:
        return self.count

    def rows(self, indices: torch.Tensor) -> torch.Tensor:
        return self.source.rows(indices + self.start)


def split_heldout(source: RowSource, global_batch: int) -> tuple[RowSource, RowSource | None]:
    """(what training reads, the held-out rows or None)."""
    n = len(source)
    if isinstance(source, SyntheticSource):
        return source, RowRange(source, n, HELDOUT_ROWS)
    held = min(HELDOUT_ROWS, n // HELDOUT_SHARE_OF_FILE)
    if held == 0 or n - held < global_batch:
        return source, None
    return RowRange(source, 0, n - held), RowRange(source, n - held, held)


# [rows, d_sae] tensors in the model's dtype that scoring a chunk holds at once, at the peak
# of each architecture's inference encode (tests/kinds/sae/test_heldout.py traces them):
# JumpReLU's and BatchTopK's the pre-activations, their ReLU, the mask in the model's dtype and
# the product; TopK's and ReLU's two. An architecture not named here is counted at four. After
# the encode only the activations stay, with the firing mask (1 byte) and, on the CPU, their
# sparse form (at most SPARSE_DECODE_DENSITY of them, 12 bytes each): within two copies.
ENCODE_COPIES = {"standard": 2, "topk": 2, "batchtopk": 4, "jumprelu": 4}
WIDEST_ENCODE_COPIES = 4
# Per d_in: the row as read (float32), scaled, in the model's dtype, its reconstruction, and
# the float64 copies the error sums take (three at once).
BYTES_PER_D_IN = 3 * 4 + 3 * 8
# On the CPU, with d_in at least SPARSE_DECODE_MIN_D_IN, a chunk whose activations are at most
# SPARSE_DECODE_DENSITY non-zero is decoded as a sparse product: at d_in 512, d_sae 4,096 the
# dense one cost as much as the encode (the pass 6.1 s dense, 4.1 s sparse, chunks of 195);
# at d_in 64 the conversion cost more than it saved (1.51 s against 1.25 s, chunks of 40).
# On CUDA the dense product is cheap and a sparse one would sync.
SPARSE_DECODE_DENSITY = 1 / 8
SPARSE_DECODE_MIN_D_IN = 256
# DDP's first flat bucket, every parameter's size, may outlive its rebuild through step 2
# (memory_trace.py); the estimate counts it above the step's peak, so from then on it is free.
# A world of one has no DDP (train.parallelize), so neither the bucket nor that room.
BUCKET_REBUILD_STEPS = 2


def score_bytes_per_row(model: Sae) -> int:
    """What scoring one row holds at most (Score.add), beside the model and the sums."""
    copies = ENCODE_COPIES.get(model.architecture, WIDEST_ENCODE_COPIES)
    return copies * model.d_sae * model.W_enc.element_size() + BYTES_PER_D_IN * model.d_in


def chunk_rows(model: Sae, per_rank_batch: int, *, step: int, ddp: bool) -> int:
    """Rows scored at a time after 1-based step `step`, sized by memory: a chunk holds no more than
    the training step held beyond what outlives it, so the held-out pass never raises the job's
    peak above the estimate (which traces that step). Two parts of every architecture's step
    bound that from below: Adam's update of W_enc or W_dec (on the CPU the loop holds two
    temporaries of one weight at once; CUDA's foreach one of each), and the forward's
    pre-activations [per-rank batch, d_sae]. With `ddp` (the run uses DDP: `uses_ddp`), after
    BUCKET_REBUILD_STEPS the old DDP bucket the estimate adds is free too.
    tests/kinds/sae/test_heldout.py checks it against the trace. By the training batch alone (a
    quarter of it), a batch of 32 took 2,048 chunks."""
    itemsize = model.W_enc.element_size()
    weights = 2 * model.d_in * model.d_sae * itemsize
    budget = max(weights, per_rank_batch * model.d_sae * itemsize)
    if ddp and step > BUCKET_REBUILD_STEPS:
        budget += sum(p.numel() * p.element_size() for p in model.parameters())
    return max(1, min(HELDOUT_ROWS, budget // score_bytes_per_row(model)))


def rank_share(source: RowSource, rank: int, world_size: int) -> torch.Tensor:
    """This rank's contiguous share of the held-out rows, raw, on the CPU: every rank scores
    its own (`evaluate` sums them), where one rank scored all while the others waited."""
    count = len(source)
    start, end = count * rank // world_size, count * (rank + 1) // world_size
    return source.rows(torch.arange(start, end))


@dataclass
class Score:
    """Sums over the rows scored so far (`Score.add` a batch at a time): what the figures
    need, so a file of any length is scored in batches that each fit in memory. The sums stay
    on the device (no host sync per batch)."""

    fire_counts: torch.Tensor  # float64[d_sae]: on how many rows each latent fired
    sum_x: torch.Tensor  # float64[d_in]
    sum_x2: torch.Tensor  # float64[d_in]
    sq_err_sum: torch.Tensor  # float64 scalar
    rows: int = 0

    @classmethod
    def empty(cls, model: Sae, device: torch.device) -> Score:
        zeros = torch.zeros(model.d_in, dtype=torch.float64, device=device)
        counts = torch.zeros(model.d_sae, dtype=torch.float64, device=device)
        sq_err = torch.zeros((), dtype=torch.float64, device=device)
        return cls(counts, zeros, zeros.clone(), sq_err)

    @property
    def sq_err(self) -> float:
        """Summed squared error over the rows."""
        return float(self.sq_err_sum)

    @sq_err.setter
    def sq_err(self, value: float) -> None:
        self.sq_err_sum.fill_(value)

    @torch.no_grad()
    def add(self, model: Sae, x: torch.Tensor) -> None:
        """Encode and decode the rows `x` (on the model's device and dtype)."""
        acts = model.encode(x)
        counts = torch.count_nonzero(acts, dim=0)
        self.fire_counts += counts
        x_hat = _decode(model, acts, int(counts.sum()) if _sparse_decode(model, acts) else None)
        del acts
        x64 = x.double()
        self.sq_err_sum += F.mse_loss(x_hat.double(), x64, reduction="sum")
        self.sum_x += x64.sum(dim=0)
        self.sum_x2 += (x64 * x64).sum(dim=0)
        self.rows += len(x)

    def summed(self) -> Score:
        """The sums over every rank, from one collective (a SUM of one flat float64 buffer;
        every rank calls it); itself in a world of one."""
        if not (dist.is_initialized() and dist.get_world_size() > 1):
            return self
        rows = torch.tensor([float(self.rows)], dtype=torch.float64, device=self.sq_err_sum.device)
        parts = [self.fire_counts, self.sum_x, self.sum_x2, self.sq_err_sum.view(1), rows]
        flat = torch.cat(parts)
        dist.all_reduce(flat)
        d_sae, d_in = len(self.fire_counts), len(self.sum_x)
        fire_counts, sum_x, sum_x2, sq_err, total = flat.split([d_sae, d_in, d_in, 1, 1])
        return Score(fire_counts, sum_x, sum_x2, sq_err[0], int(total))

    @property
    def l0(self) -> float:
        """Mean active latents per row."""
        return float(self.fire_counts.sum()) / max(1, self.rows)

    @property
    def mse(self) -> float:
        """Mean over rows of the summed squared error (the training loss's `mse_loss`)."""
        return self.sq_err / max(1, self.rows)

    @property
    def explained_variance(self) -> float:
        """SAELens's: 1 - summed squared error / summed variance around the mean."""
        n = max(1, self.rows)
        variance = float((self.sum_x2 - self.sum_x.pow(2) / n).sum())
        return 1.0 - self.sq_err / max(variance, 1e-12)

    @property
    def dead_pct(self) -> float:
        """The share of latents that fired on no row, in %."""
        return 100.0 * float((self.fire_counts == 0).sum()) / len(self.fire_counts)

    def frequencies(self) -> torch.Tensor:
        """float64[d_sae]: the share of rows each latent fired on."""
        return (self.fire_counts / max(1, self.rows)).cpu()


def _sparse_decode(model: Sae, acts: torch.Tensor) -> bool:
    """Whether the sparse product is on offer: float32 on the CPU (PyTorch has no bfloat16
    CSR product there) at a d_in where it pays, real tensors (the memory trace's fake ones
    have no CSR kernel)."""
    return (
        acts.device.type == "cpu"
        and acts.dtype == torch.float32
        and model.d_in >= SPARSE_DECODE_MIN_D_IN
        and not isinstance(acts, FakeTensor)
    )


def _decode(model: Sae, acts: torch.Tensor, nonzero: int | None) -> torch.Tensor:
    """model.decode(acts), as a sparse product when `nonzero` (the count of non-zero
    activations, None: not on offer) is small enough; equal up to float rounding."""
    if nonzero is None or nonzero > SPARSE_DECODE_DENSITY * acts.numel():
        return model.decode(acts)
    with warnings.catch_warnings():  # "sparse CSR support is in beta", once per process
        warnings.simplefilter("ignore", UserWarning)
        return acts.to_sparse_csr() @ model.W_dec + model.b_dec


@torch.no_grad()
def score(
    model: Sae,
    batches: Iterable[torch.Tensor],
    *,
    scale: float,
    device: torch.device,
) -> Score:
    """Score raw rows (on the CPU, a batch at a time) with the model's inference `encode`,
    each batch multiplied by `scale` first (the training scale; 1.0 for saved weights, which
    have it folded in). The model is in eval mode meanwhile."""
    was_training = model.training
    model.eval()
    total = Score.empty(model, device)
    try:
        for rows in batches:
            total.add(model, (rows.to(device) * scale).to(model.W_enc.dtype))
    finally:
        model.train(was_training)
    return total


def evaluate(
    model: Sae, rows: torch.Tensor, *, scale: float, chunk: int, device: torch.device
) -> dict[str, float]:
    """heldout_dead_pct, heldout_l0 and heldout_explained_variance of the held-out rows, each
    rank scoring its share `rows` (`rank_share`: raw, on the CPU) `chunk` rows at a time
    (`chunk_rows`: within the training step's peak). A collective: every rank calls it."""
    batches = (rows[start : start + chunk] for start in range(0, len(rows), chunk))
    found = score(model, batches, scale=scale, device=device).summed()
    return {
        "heldout_dead_pct": found.dead_pct,
        "heldout_l0": found.l0,
        "heldout_explained_variance": found.explained_variance,
    }


@torch.no_grad()
def feature_recovery(true_features: torch.Tensor, w_dec: torch.Tensor) -> dict[str, float]:
    """mmcs (mean over true features of the best cosine with a decoder row) and
    features_recovered_pct (the share of true features with a row within RECOVERED_COSINE)."""
    true_unit = torch.nn.functional.normalize(true_features.float(), dim=1)
    dec_unit = torch.nn.functional.normalize(w_dec.detach().float().cpu(), dim=1)
    best = (true_unit @ dec_unit.T).max(dim=1).values
    return {
        "mmcs": float(best.mean()),
        "features_recovered_pct": 100.0 * float((best >= RECOVERED_COSINE).float().mean()),
    }
