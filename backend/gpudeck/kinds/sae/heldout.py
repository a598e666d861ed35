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


@torch.no_grad()
def evaluate(
    model: Sae, rows: torch.Tensor, *, scale: float, chunk: int, device: torch.device
) -> dict[str, float]:
    """heldout_dead_pct, heldout_l0 and heldout_explained_variance on `rows` (raw, on the
    CPU), `chunk` rows at a time: with chunk at most the per-rank batch this allocates less
    than a training step, so the memory estimate covers it."""
    was_training = model.training
    model.eval()
    fired = torch.zeros(model.d_sae, dtype=torch.bool, device=device)
    active = sq_err = 0.0
    sum_x = torch.zeros(model.d_in, dtype=torch.float64, device=device)
    sum_x2 = torch.zeros_like(sum_x)
    try:
        for start in range(0, len(rows), chunk):
            x = (rows[start : start + chunk].to(device) * scale).to(model.W_enc.dtype)
            acts = model.encode(x)
            on = acts != 0
            fired |= on.any(dim=0)
            active += float(on.sum())
            del on
            x_hat = model.decode(acts).double()
            del acts
            x64 = x.double()
            sq_err += float((x_hat - x64).pow(2).sum())
            sum_x += x64.sum(dim=0)
            sum_x2 += x64.pow(2).sum(dim=0)
    finally:
        model.train(was_training)
    n = max(1, len(rows))
    variance = float((sum_x2 - sum_x.pow(2) / n).sum())
    return {
        "heldout_dead_pct": 100.0 * float((~fired).sum()) / model.d_sae,
        "heldout_l0": active / n,
        "heldout_explained_variance": 1.0 - sq_err / max(variance, 1e-12),
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
