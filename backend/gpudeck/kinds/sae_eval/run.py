"""The `sae_eval` kind's run: load one checkpoint of an `sae` job as SAELens would (its saved
weights, the activation scale folded in) and score it on rows it was not trained on, with the
held-out scorer the trainer uses at every checkpoint (kinds/sae/heldout.py).

Each rank scores every world_size-th batch; the sums are all-reduced, so N ranks give the
figures of one. Rank 0 reports them at the checkpoint's step, with the density histogram, and
writes `sparsity.safetensors` (log10 firing frequency per latent, SAELens's layout) and
`eval.json` as the job's checkpoint, for download.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.distributed as dist

from gpudeck.engine.checkpoint import open_checkpoint
from gpudeck.engine.context import TrainContext
from gpudeck.kinds.sae import checkpoint as sae_checkpoint
from gpudeck.kinds.sae.arch import build_sae
from gpudeck.kinds.sae.heldout import Score, feature_recovery
from gpudeck.kinds.sae.model import Sae
from gpudeck.kinds.sae_eval.checks import Rows, Source, open_rows, read_source
from gpudeck.kinds.sae_eval.config import SaeEvalConfig
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


def _batches(rows: Rows, batch: int, rank: int, world: int) -> list[tuple[int, int]]:
    """This rank's [start, end) row ranges, one per round (every rank the same number of
    rounds, an empty range where it has none, so the collectives line up)."""
    total = math.ceil(rows.count / batch)
    rounds = math.ceil(total / world)
    ranges = []
    for r in range(rounds):
        index = r * world + rank
        start = min(index * batch, rows.count)
        ranges.append((start, min(start + batch, rows.count)))
    return ranges


def _all_reduce(found: Score) -> None:
    if not (dist.is_initialized() and dist.get_world_size() > 1):
        return
    device = found.fire_counts.device
    scalars = torch.tensor([found.sq_err, float(found.rows)], dtype=torch.float64, device=device)
    for tensor in (found.fire_counts, found.sum_x, found.sum_x2, scalars):
        dist.all_reduce(tensor)
    found.sq_err, found.rows = float(scalars[0]), int(scalars[1])


def _score(ctx: TrainContext, model: Sae, rows: Rows, batch: int) -> Score | None:
    """The rows' sums over every rank; None when asked to stop first."""
    found = Score.empty(model, ctx.device)
    ranges = _batches(rows, batch, ctx.rank, ctx.world_size)
    for done, (start, end) in enumerate(ranges, 1):
        if end > start:
            part = rows.source.rows(torch.arange(start, end))
            found.add(model, part.to(ctx.device).to(model.W_enc.dtype))
        ctx.progress(done, len(ranges))
        if ctx.should_stop():  # a collective, at the same round on every rank
            return None
    _all_reduce(found)
    return found


def train(ctx: TrainContext, config: SaeEvalConfig) -> None:
    source = read_source(config, Path(ctx.data_dir))
    rows = open_rows(config, source, Path(ctx.data_dir))
    model = load_sae(source, ctx.device)
    if ctx.is_main:
        ctx.log(f"scoring {source.path} (step {source.step}) on {rows.count} rows")
    found = _score(ctx, model, rows, config.batch_size)
    if found is None or not ctx.is_main:
        return
    frequencies = found.frequencies()
    metrics = figures(found) | density_histogram(frequencies)
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
