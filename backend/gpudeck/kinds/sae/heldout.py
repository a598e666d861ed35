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

from collections.abc import Iterable
from dataclasses import dataclass

import torch

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


@dataclass
class Score:
    """Sums over the rows scored so far (`Score.add` a batch at a time): what the figures
    need, so a file of any length is scored in batches that each fit in memory."""

    fire_counts: torch.Tensor  # float64[d_sae]: on how many rows each latent fired
    sum_x: torch.Tensor  # float64[d_in]
    sum_x2: torch.Tensor  # float64[d_in]
    sq_err: float = 0.0
    rows: int = 0

    @classmethod
    def empty(cls, model: Sae, device: torch.device) -> Score:
        zeros = torch.zeros(model.d_in, dtype=torch.float64, device=device)
        counts = torch.zeros(model.d_sae, dtype=torch.float64, device=device)
        return cls(counts, zeros, zeros.clone())

    @torch.no_grad()
    def add(self, model: Sae, x: torch.Tensor) -> None:
        """Encode and decode the rows `x` (on the model's device and dtype)."""
        acts = model.encode(x)
        self.fire_counts += (acts != 0).sum(dim=0, dtype=torch.float64)
        x_hat = model.decode(acts).double()
        del acts
        x64 = x.double()
        self.sq_err += float((x_hat - x64).pow(2).sum())
        self.sum_x += x64.sum(dim=0)
        self.sum_x2 += x64.pow(2).sum(dim=0)
        self.rows += len(x)

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
    """heldout_dead_pct, heldout_l0 and heldout_explained_variance on `rows` (raw, on the
    CPU), `chunk` rows at a time: with chunk at most the per-rank batch this allocates less
    than a training step, so the memory estimate covers it."""
    batches = (rows[start : start + chunk] for start in range(0, len(rows), chunk))
    found = score(model, batches, scale=scale, device=device)
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
