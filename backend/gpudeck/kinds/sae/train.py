"""The `sae` job kind: train an SAE of any architecture with DDP, calling `model.train_step`.

Every rank builds the same model from the seed, takes its slice of each global batch
(data.GlobalBatchLoader, read one batch ahead on a thread: prefetch.BatchPrefetcher) and steps;
DDP averages gradients so the run matches one rank with the whole batch. A world of one steps
the bare model: no DDP, so no per-step all-reduce and no NCCL communicator (every other
collective is guarded by the world size too). Rank 0 checkpoints in SAELens's layout; resume
restores weights, Adam state, RNG and the data position exactly. The lr and L1 schedules are
functions of the step (`SaeConfig.lr_factor`, `SaeConfig.l1_coefficient_at`), so resume needs no
scheduler state.

A loss that becomes NaN or Inf fails the job, naming the first such step of any rank; the
check runs before every report and checkpoint, so no checkpoint of NaN weights is ever written
and the last good one stays the newest.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from gpudeck.engine import checkpoint
from gpudeck.engine.context import TrainContext
from gpudeck.kinds.sae import checkpoint as sae_checkpoint
from gpudeck.kinds.sae.arch import build_sae
from gpudeck.kinds.sae.config import FileDataset, SaeConfig, uses_ddp
from gpudeck.kinds.sae.data import (
    ActivationStats,
    DataPosition,
    GlobalBatchLoader,
    SyntheticSource,
    activation_stats,
    open_source,
)
from gpudeck.kinds.sae.heldout import (
    chunk_rows,
    evaluate,
    feature_recovery,
    rank_share,
    split_heldout,
)
from gpudeck.kinds.sae.metrics import DeadLatents, MetricsTracker
from gpudeck.kinds.sae.model import Sae, SaeOutput, train_step
from gpudeck.kinds.sae.prefetch import BatchPrefetcher

SAE_LENS_VERSION = "6.0.0"  # the cfg.json format we write (SAELens >= 6 reads it as is)
PEAK_MEMORY_AFTER_STEPS = 3
# The first non-finite step is kept on the device as 4 * step + what, so that one all_reduce
# MIN over ranks finds the earliest; NO_BAD_STEP when every step so far was finite.
NO_BAD_STEP = 2**62
_NON_FINITE = ("loss became nan", "loss became inf", "weights became non-finite")


# torch 2.13 renamed DDP's broadcast_buffers (deprecated since) to forward_sync_buffers; CUDA
# builds older than that (the device machine's 2.11) know only the old name.
_SYNC_BUFFERS = (
    "forward_sync_buffers"
    if "forward_sync_buffers" in inspect.signature(DistributedDataParallel.__init__).parameters
    else "broadcast_buffers"
)


class NonFiniteLoss(FloatingPointError):
    pass


@dataclass
class _Run:
    config: SaeConfig
    model: Sae
    scale: float  # activation normalisation (data.activation_stats)
    dead: DeadLatents | None  # global per-step firing, for AuxK (topk family only)
    net: torch.nn.Module  # what is stepped: `model`, or its DDP wrapper (parallelize)
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    batches: BatchPrefetcher  # its `position` is the checkpoint's, its loader's one batch ahead
    metrics: MetricsTracker
    true_features: torch.Tensor | None
    step: int
    last_saved: int
    first_bad: torch.Tensor  # see NO_BAD_STEP
    # Per-latent firing counts on this rank since the last checkpoint (sparsity.safetensors).
    fire_counts: torch.Tensor
    # This rank's share of the rows kept out of training, raw, on the CPU (heldout.evaluate).
    heldout_rows: torch.Tensor | None


def build_model(
    config: SaeConfig, device: torch.device, stats: ActivationStats | None = None
) -> Sae:
    """The config's SAE, initialised from the seed (and the data mean for b_dec)."""
    model = build_sae(config)
    b_dec = stats.mean if stats is not None and config.b_dec_init == "mean" else None
    model.initialize(torch.Generator().manual_seed(config.seed), b_dec)
    return model.to(device)


def parallelize(
    model: Sae, config: SaeConfig, device: torch.device, world_size: int
) -> torch.nn.Module:
    """The module the trainer steps: its DDP wrapper where the run uses DDP (`uses_ddp`), else
    the model itself."""
    return wrap_ddp(model, config, device) if uses_ddp(world_size) else model


def wrap_ddp(
    model: torch.nn.Module, config: SaeConfig, device: torch.device, *, init_sync: bool = True
) -> DistributedDataParallel:
    """`init_sync=False` skips the start-up broadcast of rank 0's weights: only a world of one
    (the memory measurement) may skip it."""
    sync_buffers: dict[str, Any] = {_SYNC_BUFFERS: config.ddp.broadcast_buffers}
    return DistributedDataParallel(
        model,
        device_ids=[device.index or 0] if device.type == "cuda" else None,
        bucket_cap_mb=config.ddp.bucket_cap_mb,
        gradient_as_bucket_view=config.ddp.gradient_as_bucket_view,
        **sync_buffers,
        init_sync=init_sync,
    )


def sae_lens_cfg(config: SaeConfig, model: Sae, scale: float) -> dict[str, Any]:
    """cfg.json as `sae_lens.SAE.load_from_disk` reads it: the inference config of the
    architecture (BatchTopK saves as JumpReLU, as SAELens does) + metadata. The activation
    scale is folded into the weights, so normalize_activations is "none", as SAELens writes
    after folding its own scaling factor."""
    dataset = config.dataset
    lr_warm_up, lr_decay, l1_warm_up = config.schedule_lengths()
    dataset_path = dataset.path if isinstance(dataset, FileDataset) else "gpudeck:synthetic"
    metadata = {
        "sae_lens_version": SAE_LENS_VERSION,
        "sae_lens_training_version": SAE_LENS_VERSION,
        "model_name": "gpudeck",
        "hook_name": "gpudeck",
        "hook_layer": 0,
        "hook_head_index": None,
        "context_size": 1,  # activations arrive as independent vectors, not sequences
        "dataset_path": dataset_path,
        "prepend_bos": False,
    }
    return {
        "architecture": model.sae_lens_architecture,
        "d_in": config.d_in,
        "d_sae": config.d_sae,
        "dtype": config.dtype,
        "device": "cpu",
        "apply_b_dec_to_input": True,
        "normalize_activations": "none",
        "reshape_activations": "none",
        "activation_fn": "relu",
        **model.sae_lens_fields(),
        **metadata,  # pre-6.0 readers look for these at the top level
        "metadata": metadata,
        "gpudeck": {
            "architecture": config.architecture,
            "activation_scale": scale,
            "l1_coefficient": config.l1_coefficient,
            "lr": config.lr,
            # In steps, as this run resolved them (the config may give shares of the run).
            "lr_warm_up_steps": lr_warm_up,
            "lr_decay_steps": lr_decay,
            "l1_warm_up_steps": l1_warm_up,
            "topk_warm_up_steps": config.topk_warm_up_length(),
            "grad_clip_norm": config.grad_clip_norm_value,
            **({"k": config.k} if config.architecture in ("topk", "batchtopk") else {}),
            **(
                {"l0_coefficient": config.l0_coefficient_value}
                if config.architecture == "jumprelu"
                else {}
            ),
        },
    }


def _save(ctx: TrainContext, run: _Run) -> None:
    named = list(run.model.named_parameters())
    state_tensors = {
        "step": torch.tensor(run.step, dtype=torch.int64),
        **checkpoint.optimizer_tensors(run.optimizer, named),
        **checkpoint.rng_tensors(),
        **{f"buffer.{name}": b.detach() for name, b in run.model.named_buffers()},
    }
    state_tensors.update(run.metrics.state_tensors())
    if run.dead is not None:
        state_tensors["dead.steps_since_fired"] = run.dead.steps_since_fired
        state_tensors["dead.frequency"] = run.dead.frequency
    state = {
        "step": run.step,
        "epoch": run.batches.position.epoch,
        "position": run.batches.position.position,
        "config": run.config.model_dump(mode="json"),
        "world_size": ctx.world_size,
        "torch_version": torch.__version__,
        "activation_scale": run.scale,
    }
    saved = sae_checkpoint.SaeSave(
        weights=run.model.export_weights(run.scale),
        cfg=sae_lens_cfg(run.config, run.model, run.scale),
        sparsity=log_feature_density(ctx, run),
        state_tensors=state_tensors,
        state=state,
    )
    sae_checkpoint.save(ctx, run.step, saved)
    run.last_saved = run.step
    run.fire_counts.zero_()


def log_feature_density(ctx: TrainContext, run: _Run) -> torch.Tensor:
    """log10(fraction of samples each latent fired on + 1e-10), as SAELens writes it, over the
    steps since the previous checkpoint (SAELens: over its feature-sampling window). Counts are
    summed over ranks: a collective, and every rank saves at the same steps. The window
    restarts at each checkpoint, so a resumed run needs no saved counts."""
    counts = run.fire_counts.clone()
    if dist.is_initialized() and ctx.world_size > 1:
        dist.all_reduce(counts)
    samples = max(1, (run.step - run.last_saved) * run.config.batch_size)
    return torch.log10(counts / samples + 1e-10).float()


def _restore(
    ctx: TrainContext, model: Sae, scale: float
) -> tuple[int, DataPosition, sae_checkpoint.SaeCheckpoint | None]:
    """Load weights into `model`; returns (step, data position, the checkpoint for the rest)."""
    if ctx.resume_from is None:
        return 0, DataPosition(), None
    ckpt = sae_checkpoint.load(ctx.resume_from)
    saved_scale = float(ckpt.state.get("activation_scale", 1.0))
    if saved_scale != scale:
        raise ValueError(f"the checkpoint's activation scale {saved_scale} differs from {scale}")
    model.load_exported(ckpt.weights, scale)
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            saved = ckpt.state_tensors.get(f"buffer.{name}")
            if saved is not None:  # checkpoints from before a buffer existed lack it
                buffer.copy_(saved)
    position = DataPosition(epoch=int(ckpt.state["epoch"]), position=int(ckpt.state["position"]))
    if ctx.is_main:
        ctx.log(f"resumed from {ctx.resume_from} at step {ckpt.step}")
    return ckpt.step, position, ckpt


def _setup(ctx: TrainContext, config: SaeConfig) -> _Run:
    full_source = open_source(config, ctx.data_dir)
    source, heldout = split_heldout(full_source, config.batch_size)
    stats = activation_stats(source, config)
    model = build_model(config, ctx.device, stats)
    step, position, ckpt = _restore(ctx, model, stats.scale)
    net = parallelize(model, config, ctx.device, ctx.world_size)
    optimizer = torch.optim.Adam(
        model.parameters(), lr=config.lr, betas=(config.adam_beta1, config.adam_beta2)
    )
    if ckpt is not None:
        named = list(model.named_parameters())
        checkpoint.load_optimizer_tensors(optimizer, named, ckpt.state_tensors)
        checkpoint.restore_rng(ckpt.state_tensors)
    scheduler = lr_scheduler(optimizer, config, step)
    loader = GlobalBatchLoader(
        source,
        global_batch=config.batch_size,
        rank=ctx.rank,
        world_size=ctx.world_size,
        seed=config.seed,
        start=position,
    )
    tracker = MetricsTracker(
        d_sae=config.d_sae, global_batch=config.batch_size, start_step=step, device=ctx.device
    )
    if ckpt is not None:
        tracker.restore(ckpt.state_tensors)
    features = full_source.features if isinstance(full_source, SyntheticSource) else None
    heldout_rows = None
    if heldout is not None:
        heldout_rows = rank_share(heldout, ctx.rank, ctx.world_size)
    first_bad = torch.tensor(NO_BAD_STEP, dtype=torch.int64, device=ctx.device)
    dead = None
    if config.architecture in ("topk", "batchtopk"):
        dead = DeadLatents(
            config.d_sae,
            config.dead_window_steps,
            ctx.device,
            min_frequency=config.dead_min_frequency_value,
            global_batch=config.batch_size,
        )
        if ckpt is not None:
            dead.restore(
                ckpt.state_tensors["dead.steps_since_fired"],
                ckpt.state_tensors.get("dead.frequency"),
            )
    # Its thread starts last, so that nothing in the setup can raise and leave it behind.
    batches = BatchPrefetcher(loader, batches=config.steps - step, device=ctx.device)
    return _Run(
        config,
        model,
        stats.scale,
        dead,
        net,
        optimizer,
        scheduler,
        batches,
        tracker,
        features,
        step,
        step,
        first_bad,
        torch.zeros(config.d_sae, dtype=torch.float64, device=ctx.device),
        heldout_rows,
    )


def lr_scheduler(
    optimizer: torch.optim.Optimizer, config: SaeConfig, step: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """The lr schedule, positioned so the optimizer's lr is that of 0-based step `step`.

    Built from the step alone (no saved state), so a resumed run gets the very same lrs.
    """
    for group in optimizer.param_groups:
        group["initial_lr"] = config.lr  # LambdaLR's base lr when starting past step 0
    return torch.optim.lr_scheduler.LambdaLR(optimizer, config.lr_factor, last_epoch=step - 1)


def _report(ctx: TrainContext, run: _Run, metrics: dict[str, float], *, heldout: bool) -> None:
    """Rank 0 reports the training batch's `metrics` (MetricsTracker.compute, a collective
    every rank made); with `heldout` (at a checkpoint, a collective too) the held-out rows'
    figures join them."""
    if heldout:
        metrics |= _heldout_metrics(ctx, run)
    if ctx.is_main:
        if run.true_features is not None:
            metrics |= feature_recovery(run.true_features, run.model.W_dec)
        ctx.report(run.step, metrics)
        ctx.progress(run.step, run.config.steps)


def _heldout_metrics(ctx: TrainContext, run: _Run) -> dict[str, float]:
    if run.heldout_rows is None:
        return {}
    start = time.perf_counter()
    local_batch = run.batches.loader.local_batch
    chunk = chunk_rows(run.model, local_batch, step=run.step, ddp=uses_ddp(ctx.world_size))
    figures = evaluate(run.model, run.heldout_rows, scale=run.scale, chunk=chunk, device=ctx.device)
    # What the pass cost (its figures synced the device): a small share of a checkpoint
    # interval (docs/benchmarks.md).
    return figures | {"heldout_eval_s": time.perf_counter() - start}


def set_topk_warm_up(model: Sae, config: SaeConfig, step: int) -> None:
    """Before 0-based step `step`: TopK selection while it is inside the warm-up, and the
    switch at its end. By step, not by state, so a run resumed at the switch makes it too."""
    warm_up = config.topk_warm_up_length()
    if warm_up and step == warm_up:
        model.end_topk_warm_up()
    model.topk_warm_up = step < warm_up


def _one_step(run: _Run) -> tuple[torch.Tensor, SaeOutput]:
    batch = run.batches.next_batch()
    if run.scale != 1.0:
        batch = batch * run.scale
    batch = batch.to(run.model.W_enc.dtype)
    set_topk_warm_up(run.model, run.config, run.step)
    output = train_step(
        run.net,
        run.optimizer,
        batch,
        coefficient=run.config.coefficient_at(run.step),
        grad_clip_norm=run.config.grad_clip_norm_value,
        dead_mask=run.dead.mask() if run.dead is not None else None,
    )
    run.scheduler.step()  # sets the lr of the next step
    run.step += 1
    counts = output.latents.fire_counts(run.config.d_sae)
    run.fire_counts += counts
    # Alive as the saved model would fire: the dead count and AuxK's mask go by it.
    threshold = run.model.firing_threshold()
    if threshold is not None:
        counts = output.latents.fire_counts(run.config.d_sae, above=threshold)
    run.metrics.observe(run.step, counts > 0)
    if run.dead is not None:
        run.dead.observe(counts)  # the statistics' one collective a step
    _watch_loss(run, output.loss.detach())
    return batch, output


def _watch_loss(run: _Run, loss: torch.Tensor) -> None:
    """Remember the first step whose loss was NaN or Inf, on the device (no sync per step)."""
    what = torch.where(torch.isnan(loss), 0, 1)
    code = 4 * run.step + what
    fresh = ~torch.isfinite(loss) & (run.first_bad == NO_BAD_STEP)
    run.first_bad = torch.where(fresh, code, run.first_bad)


def _check_finite(ctx: TrainContext, run: _Run, *, weights: bool) -> None:
    """Raise NonFiniteLoss naming the first bad step of any rank. A collective: every rank
    calls it at the same steps. `weights`: also check the parameters (before a checkpoint)."""
    first = run.first_bad.clone()
    if weights and first.item() == NO_BAD_STEP:
        finite = all(bool(torch.isfinite(p).all()) for p in run.model.parameters())
        if not finite:
            first.fill_(4 * run.step + 2)
    if dist.is_initialized() and ctx.world_size > 1:
        dist.all_reduce(first, op=dist.ReduceOp.MIN)
    code = int(first.item())
    if code != NO_BAD_STEP:
        raise NonFiniteLoss(f"{_NON_FINITE[code % 4]} at step {code // 4}")


def train(ctx: TrainContext, config: SaeConfig) -> None:
    """Train until config.steps or a stop request; checkpoint periodically and at the end."""
    run = _setup(ctx, config)
    start = run.step
    try:
        while run.step < config.steps and not ctx.should_stop():
            batch, output = _one_step(run)
            if run.step - start == PEAK_MEMORY_AFTER_STEPS:
                ctx.report_peak_memory(run.step)
            last = run.step == config.steps
            report_due = run.step % config.metrics_interval == 0 or last
            save_due = run.step % config.checkpoint_interval == 0 or last
            metrics = None
            if report_due or save_due:
                _check_finite(ctx, run, weights=save_due)
                metrics = run.metrics.compute(run.step, batch, output, config.coefficient_name)
            # Free the step's tensors before the held-out pass (heldout.chunk_rows counts on
            # it) and the next step's forward.
            del batch, output
            if metrics is not None:
                # Every checkpoint gets a report, with the held-out figures of its weights.
                _report(ctx, run, metrics, heldout=save_due)
            if save_due:
                _save(ctx, run)
        _check_finite(ctx, run, weights=True)
        if run.step > run.last_saved:  # a cancel: keep what was trained
            figures = _heldout_metrics(ctx, run)  # every rank: a collective
            if ctx.is_main and figures:
                ctx.report(run.step, figures)
            _save(ctx, run)
        ctx.report_peak_memory(run.step)
        ctx.progress(run.step, config.steps)
    finally:
        run.batches.close()
        # The DDP reducer must be gone before destroy_process_group (pytorch issue #56297).
        del run.net
        del run
