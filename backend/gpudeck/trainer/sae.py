"""The `sae` job kind: train a standard ReLU SAE with DDP, calling `sae_model.train_step`.

Every rank builds the same model from the seed, takes its slice of each global batch
(data.GlobalBatchLoader) and steps; DDP averages gradients so the run matches one rank with
the whole batch. Rank 0 checkpoints in SAELens's layout; resume restores weights, Adam state,
RNG and the data position exactly. The lr and L1 schedules are functions of the step
(`SaeConfig.lr_factor`, `SaeConfig.l1_coefficient_at`), so resume needs no scheduler state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from gpudeck.trainer import checkpoint
from gpudeck.trainer.context import TrainContext
from gpudeck.trainer.data import DataPosition, GlobalBatchLoader, SyntheticSource, open_source
from gpudeck.trainer.metrics import MetricsTracker, mmcs
from gpudeck.trainer.sae_config import FileDataset, SaeConfig
from gpudeck.trainer.sae_model import SaeOutput, SparseAutoencoder, train_step

SAE_LENS_VERSION = "6.0.0"  # the cfg.json format we write (SAELens >= 6 reads it as is)
PEAK_MEMORY_AFTER_STEPS = 3
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


@dataclass
class _Run:
    config: SaeConfig
    model: SparseAutoencoder
    ddp: DistributedDataParallel
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    loader: GlobalBatchLoader
    metrics: MetricsTracker
    true_features: torch.Tensor | None
    step: int
    last_saved: int


def build_model(config: SaeConfig, device: torch.device) -> SparseAutoencoder:
    model = SparseAutoencoder(config.d_in, config.d_sae, dtype=_DTYPES[config.dtype])
    model.initialize(torch.Generator().manual_seed(config.seed))
    return model.to(device)


def wrap_ddp(
    model: torch.nn.Module, config: SaeConfig, device: torch.device
) -> DistributedDataParallel:
    return DistributedDataParallel(
        model,
        device_ids=[device.index or 0] if device.type == "cuda" else None,
        bucket_cap_mb=config.ddp.bucket_cap_mb,
        gradient_as_bucket_view=config.ddp.gradient_as_bucket_view,
        # The SAE has no buffers; this is the non-deprecated spelling of broadcast_buffers.
        forward_sync_buffers=config.ddp.broadcast_buffers,
    )


def sae_lens_cfg(config: SaeConfig) -> dict[str, Any]:
    """cfg.json as `sae_lens.SAE.load_from_disk` reads it (a StandardSAEConfig + metadata)."""
    dataset = config.dataset
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
        "architecture": "standard",
        "d_in": config.d_in,
        "d_sae": config.d_sae,
        "dtype": config.dtype,
        "device": "cpu",
        "apply_b_dec_to_input": True,
        "normalize_activations": "none",
        "reshape_activations": "none",
        "activation_fn": "relu",
        **metadata,  # pre-6.0 readers look for these at the top level
        "metadata": metadata,
        "gpudeck": {
            "l1_coefficient": config.l1_coefficient,
            "lr": config.lr,
            "lr_warm_up_steps": config.lr_warm_up_steps,
            "lr_decay_steps": config.lr_decay_steps,
            "l1_warm_up_steps": config.l1_warm_up_steps,
        },
    }


def _save(ctx: TrainContext, run: _Run) -> None:
    named = list(run.model.named_parameters())
    state_tensors = {
        "step": torch.tensor(run.step, dtype=torch.int64),
        **checkpoint.optimizer_tensors(run.optimizer, named),
        **checkpoint.rng_tensors(),
    }
    state = {
        "step": run.step,
        "epoch": run.loader.state.epoch,
        "position": run.loader.state.position,
        "config": run.config.model_dump(mode="json"),
        "world_size": ctx.world_size,
        "torch_version": torch.__version__,
    }
    weights = {name: param.detach() for name, param in named}
    ctx.save_checkpoint(run.step, weights, sae_lens_cfg(run.config), state_tensors, state)
    run.last_saved = run.step


def _restore(ctx: TrainContext, model: SparseAutoencoder) -> tuple[int, DataPosition, Any]:
    """Load weights into `model`; returns (step, data position, the checkpoint for the rest)."""
    if ctx.resume_from is None:
        return 0, DataPosition(), None
    ckpt = checkpoint.load_checkpoint(ctx.resume_from)
    with torch.no_grad():
        model.load_state_dict({k: v.to(ctx.device) for k, v in ckpt.weights.items()})
    position = DataPosition(epoch=int(ckpt.state["epoch"]), position=int(ckpt.state["position"]))
    if ctx.is_main:
        ctx.log(f"resumed from {ctx.resume_from} at step {ckpt.step}")
    return ckpt.step, position, ckpt


def _setup(ctx: TrainContext, config: SaeConfig) -> _Run:
    model = build_model(config, ctx.device)
    step, position, ckpt = _restore(ctx, model)
    ddp = wrap_ddp(model, config, ctx.device)
    optimizer = torch.optim.Adam(
        model.parameters(), lr=config.lr, betas=(config.adam_beta1, config.adam_beta2)
    )
    if ckpt is not None:
        named = list(model.named_parameters())
        checkpoint.load_optimizer_tensors(optimizer, named, ckpt.state_tensors)
        checkpoint.restore_rng(ckpt.state_tensors)
    scheduler = lr_scheduler(optimizer, config, step)
    source = open_source(config, ctx.data_dir)
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
    features = source.features if isinstance(source, SyntheticSource) else None
    return _Run(config, model, ddp, optimizer, scheduler, loader, tracker, features, step, step)


def lr_scheduler(
    optimizer: torch.optim.Optimizer, config: SaeConfig, step: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """The lr schedule, positioned so the optimizer's lr is that of 0-based step `step`.

    Built from the step alone (no saved state), so a resumed run gets the very same lrs.
    """
    for group in optimizer.param_groups:
        group["initial_lr"] = config.lr  # LambdaLR's base lr when starting past step 0
    return torch.optim.lr_scheduler.LambdaLR(optimizer, config.lr_factor, last_epoch=step - 1)


def _report(ctx: TrainContext, run: _Run, batch: torch.Tensor, output: SaeOutput) -> None:
    metrics = run.metrics.compute(run.step, batch, output)
    if ctx.is_main:
        if run.true_features is not None:
            metrics["mmcs"] = mmcs(run.true_features, run.model.W_dec)
        ctx.report(run.step, metrics)
        ctx.progress(run.step, run.config.steps)


def _one_step(run: _Run, device: torch.device) -> tuple[torch.Tensor, SaeOutput]:
    batch = run.loader.next_batch().to(device, dtype=run.model.W_enc.dtype, non_blocking=True)
    output = train_step(
        run.ddp,
        run.optimizer,
        batch,
        l1_coefficient=run.config.l1_coefficient_at(run.step),
        grad_clip_norm=run.config.grad_clip_norm,
    )
    run.scheduler.step()  # sets the lr of the next step
    run.step += 1
    run.metrics.observe(run.step, output.feature_acts)
    return batch, output


def train(ctx: TrainContext, config: SaeConfig) -> None:
    """Train until config.steps or a stop request; checkpoint periodically and at the end."""
    run = _setup(ctx, config)
    start = run.step
    try:
        while run.step < config.steps and not ctx.should_stop():
            batch, output = _one_step(run, ctx.device)
            if run.step - start == PEAK_MEMORY_AFTER_STEPS:
                ctx.report_peak_memory(run.step)
            if run.step % config.metrics_interval == 0 or run.step == config.steps:
                _report(ctx, run, batch, output)
            if run.step % config.checkpoint_interval == 0:
                _save(ctx, run)
            del batch, output  # free activations before the next step's forward
        if run.step > run.last_saved:  # the end, or a cancel: keep what was trained
            _save(ctx, run)
        ctx.report_peak_memory(run.step)
        ctx.progress(run.step, config.steps)
    finally:
        # The DDP reducer must be gone before destroy_process_group (pytorch issue #56297).
        del run.ddp
        del run
