"""The `sae_eval` kind's run: load one checkpoint of an `sae` job as SAELens would (its saved
weights, the activation scale folded in) and score it on rows it was not trained on, with the
held-out scorer the trainer uses at every checkpoint (kinds/sae/heldout.py); with
`loss_recovered`, also on the language model's sequences (lm_loss.py).

Each rank scores every world_size-th batch (of rows, then of sequences); the sums are
all-reduced, so N ranks give the figures of one. Rank 0 reports them at the checkpoint's step,
with the density histogram, and writes `sparsity.safetensors` (log10 firing frequency per
latent, SAELens's layout) and `eval.json` as the job's checkpoint, for download.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist

from gpudeck.engine.checkpoint import open_checkpoint
from gpudeck.engine.context import TrainContext
from gpudeck.kinds.sae import checkpoint as sae_checkpoint
from gpudeck.kinds.sae.arch import build_sae
from gpudeck.kinds.sae.heldout import Score, feature_recovery
from gpudeck.kinds.sae.model import Sae
from gpudeck.kinds.sae_eval import lm_loss
from gpudeck.kinds.sae_eval.checks import Rows, Source, open_rows, read_source
from gpudeck.kinds.sae_eval.config import LossRecovered, NoLossRecovered, SaeEvalConfig
from gpudeck.kinds.sae_eval.density import BIN_EDGES, NEVER, bin_metric

LOG10_FLOOR = 1e-10  # SAELens's: log10(frequency + 1e-10)


def load_sae(source: Source, device: torch.device) -> Sae:
    """The checkpoint's SAE on raw activations (its saved weights, the scale folded in)."""
    model = build_sae(source.config)
    weights = open_checkpoint(source.path).read_tensors(sae_checkpoint.WEIGHTS_FILE)
    model.load_exported(weights, 1.0)
    return model.to(device).eval()


def figures(found: Score) -> dict[str, float]:
    return {
        "l0": found.l0,
        "explained_variance": found.explained_variance,
        "mse": found.mse,
        "dead_pct": found.dead_pct,
        "dead_latents": float((found.fire_counts == 0).sum()),
        "rows": float(found.rows),
    }


def density_histogram(frequencies: torch.Tensor) -> dict[str, float]:
    """Latents per bin of log10(firing frequency) (density.py's bins); NEVER: no row."""
    fired = frequencies[frequencies > 0]
    edges = torch.tensor(BIN_EDGES, dtype=torch.float64)
    counts = torch.bincount(
        torch.bucketize(fired.double().log10(), edges, right=True), minlength=len(edges) + 1
    )
    hist = {bin_metric(i): float(c) for i, c in enumerate(counts.tolist())}
    return {NEVER: float(len(frequencies) - len(fired)), **hist}


def _batches(count: int, batch: int, rank: int, world: int) -> list[tuple[int, int]]:
    """This rank's [start, end) ranges of `count` rows (or sequences), one per round (every
    rank the same number of rounds, an empty range where it has none, so the collectives line
    up)."""
    total = math.ceil(count / batch)
    rounds = math.ceil(total / world)
    ranges = []
    for r in range(rounds):
        index = r * world + rank
        start = min(index * batch, count)
        ranges.append((start, min(start + batch, count)))
    return ranges


class Progress:
    """One progress bar over both phases: the rows' rounds, then the sequences'."""

    def __init__(self, ctx: TrainContext, total: int) -> None:
        self.ctx, self.total, self.done = ctx, total, 0

    def step(self) -> bool:
        """Counts one round; False when asked to stop (a collective, at the same round on
        every rank)."""
        self.done += 1
        self.ctx.progress(self.done, self.total)
        return not self.ctx.should_stop()


def _all_reduce(found: Score) -> None:
    if not (dist.is_initialized() and dist.get_world_size() > 1):
        return
    device = found.fire_counts.device
    scalars = torch.tensor([found.sq_err, float(found.rows)], dtype=torch.float64, device=device)
    for tensor in (found.fire_counts, found.sum_x, found.sum_x2, scalars):
        dist.all_reduce(tensor)
    found.sq_err, found.rows = float(scalars[0]), int(scalars[1])


def _score(
    ctx: TrainContext, model: Sae, rows: Rows, ranges: list[tuple[int, int]], progress: Progress
) -> Score | None:
    """The rows' sums over every rank; None when asked to stop first."""
    found = Score.empty(model, ctx.device)
    for start, end in ranges:
        if end > start:
            part = rows.source.rows(torch.arange(start, end))
            found.add(model, part.to(ctx.device).to(model.W_enc.dtype))
        if not progress.step():
            return None
    _all_reduce(found)
    return found


@dataclass(frozen=True)
class LmPass:
    """Loss recovered's share of the work on this rank: the model and its sequence ranges."""

    lm: lm_loss.LanguageModel
    spec: LossRecovered
    ranges: list[tuple[int, int]]


def _lm_pass(ctx: TrainContext, spec: LossRecovered | NoLossRecovered) -> LmPass | None:
    if not isinstance(spec, LossRecovered):
        return None
    lm = lm_loss.open_model(spec, Path(ctx.data_dir), ctx.device)
    return LmPass(lm, spec, _batches(lm.count, spec.batch_size, ctx.rank, ctx.world_size))


def _lm_sums(work: LmPass, sae: Sae, progress: Progress) -> torch.Tensor | None:
    """lm_loss.batch_sums over this rank's sequences, summed over every rank; None: stopped."""
    sums = torch.zeros(4, dtype=torch.float64)
    for start, end in work.ranges:
        if end > start:
            sums += lm_loss.batch_sums(work.lm, sae, work.spec, start, end)
        if not progress.step():
            return None
    if dist.is_initialized() and dist.get_world_size() > 1:
        on_device = sums.to(progress.ctx.device)
        dist.all_reduce(on_device)
        sums = on_device.cpu()
    return sums


def train(ctx: TrainContext, config: SaeEvalConfig) -> None:
    source = read_source(config, Path(ctx.data_dir))
    rows = open_rows(config, source, Path(ctx.data_dir))
    model = load_sae(source, ctx.device)
    lm_pass = _lm_pass(ctx, config.loss_recovered)
    row_ranges = _batches(rows.count, config.batch_size, ctx.rank, ctx.world_size)
    if ctx.is_main:
        also = "" if lm_pass is None else f" and the model on {lm_pass.lm.count} sequences"
        ctx.log(f"scoring {source.path} (step {source.step}) on {rows.count} rows{also}")
    progress = Progress(ctx, len(row_ranges) + (len(lm_pass.ranges) if lm_pass else 0))
    found = _score(ctx, model, rows, row_ranges, progress)
    if found is None:
        return
    lm_figures: dict[str, float] = {}
    if lm_pass is not None:
        sums = _lm_sums(lm_pass, model, progress)
        if sums is None:
            return
        lm_figures = lm_loss.figures(sums)
        why = lm_loss.left_out(lm_figures, lm_pass.spec.hook)
        if why is not None and ctx.is_main:
            ctx.log(why)
    if not ctx.is_main:
        return
    frequencies = found.frequencies()
    metrics = figures(found) | density_histogram(frequencies) | lm_figures
    if rows.true_features is not None:
        metrics |= feature_recovery(rows.true_features, model.W_dec)
    ctx.report(source.step, metrics)
    ctx.save_checkpoint(
        source.step,
        tensor_files={
            sae_checkpoint.SPARSITY_FILE: {
                "sparsity": torch.log10(frequencies + LOG10_FLOOR).float()
            }
        },
        json_files={"eval.json": {"source_job": config.source_job, "step": source.step, **metrics}},
    )
