"""Peak device memory per rank of an `sae` training step, before launch, with a breakdown.

The step itself comes from a fake-tensor trace of the trainer's own `train_step`
(memory_trace.py): exact to the byte against the CPU allocator, and rounded as the CUDA caching
allocator rounds. The trace also gives DDP's bucket-rebuild overlap (the first iteration's flat
bucket, still referenced by the process group's last all-reduce when the second step rebuilds
the buckets): it depends on thread scheduling, so the estimate takes the worst case and adds it.
Two terms are added from outside the trace, each documented in docs/memory.md:

- cuBLAS workspaces: allocated by torch through the caching allocator on the first matmul of
  a handle, so `torch.cuda.max_memory_allocated` counts them: 32 MiB each, the size PyTorch
  picks on Hopper (sm90, pytorch/pytorch#120925), and a step uses two handles (autograd runs
  the backward on a thread of its own). Measured on an H200: 64 MiB, and the step peak exactly
  32 MiB above the estimate while it counted one. Smaller GPUs use less, so this errs high.
- framework reserve: what the process holds outside the caching allocator and NVML still
  counts: the CUDA context with its loaded kernels, and NCCL's communicator. Measured, see
  below. A world of one has made no collective since the trainer stopped wrapping it in DDP, so
  NCCL creates no communicator there: for one rank the NCCL term is an overcount, kept until
  the next GPU run measures what such a process holds (docs/memory.md).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import torch

from gpudeck.engine.kinds import DeviceType, MemoryComponent, MemoryEstimate
from gpudeck.kinds.sae.config import SaeConfig, uses_ddp
from gpudeck.kinds.sae.memory_trace import (
    CUDA_BLOCK_BYTES,
    TraceResult,
    TraceSpec,
    rounded,
    trace,
)

MiB = 1024**2
CUBLAS_WORKSPACE_BYTES = 32 * MiB
CUBLAS_HANDLES = 2  # the forward's thread and autograd's backward thread
# CUDA context + lazily loaded kernels of a PyTorch process (CUDA_MODULE_LOADING=LAZY, PyTorch's
# default): 612 MiB measured on an H200 (driver 580, CUDA 13.0, torch 2.11); `make gpu-check`
# measures it on each GPU it runs on.
CUDA_CONTEXT_BYTES = 640 * MiB
# NCCL: NCCL_BUFFSIZE (4 MiB) per channel, per peer, for each protocol buffer, plus LL/LL128
# buffers: 558 MiB measured for a world of one on the same H200, after its first all-reduce.
NCCL_BYTES = 576 * MiB
TORCH_VERSION = torch.__version__.split("+")[0]


def estimate_sae(
    config: SaeConfig, world_size: int = 1, *, device_type: DeviceType = "cuda"
) -> MemoryEstimate:
    """Peak memory per device of one rank training `config` on `world_size` ranks."""
    if world_size < 1 or config.batch_size % world_size:
        raise ValueError(f"batch_size {config.batch_size} does not split across {world_size} ranks")
    return _estimate(estimate_key(config, world_size, device_type))


@dataclass(frozen=True)
class EstimateKey:
    """What the estimate is a function of: the step of each phase the run goes through
    (TraceSpec: only what changes memory), the world size and the device type. Configs with
    the same key get the same estimate, byte for byte, from one trace."""

    phases: tuple[TraceSpec, ...]
    world_size: int
    device_type: DeviceType


def estimate_key(config: SaeConfig, world_size: int, device_type: DeviceType) -> EstimateKey:
    spec = trace_spec(config, config.batch_size // world_size, device_type, world_size=world_size)
    phases = [spec]
    if config.topk_warm_up_length() > 0:  # the warm-up's TopK step may peak higher
        phases.append(dataclasses.replace(spec, topk_warm_up=True, k=config.k))
    return EstimateKey(tuple(phases), world_size, device_type)


# Estimates by key. Read without the lock, so that a known config never waits behind the
# trace of another (the start-up warm-up's, or a sweep's); a miss takes the lock: concurrent
# first requests for one config (a burst of submissions) would otherwise each trace it, all
# holding the GIL, before the cache has the answer.
_ESTIMATES: dict[EstimateKey, MemoryEstimate] = {}
_MAX_ESTIMATES = 4096  # a few KiB each
_TRACE_LOCK = threading.Lock()


def _estimate(key: EstimateKey) -> MemoryEstimate:
    known = _ESTIMATES.get(key)
    if known is not None:
        return known
    with _TRACE_LOCK:
        known = _ESTIMATES.get(key)
        if known is None:
            known = _assemble(key, _highest_phase(key.phases))
            if len(_ESTIMATES) >= _MAX_ESTIMATES:
                _ESTIMATES.pop(next(iter(_ESTIMATES)))  # the oldest
            _ESTIMATES[key] = known
    return known


def _highest_phase(phases: tuple[TraceSpec, ...]) -> TraceResult:
    return max(map(_trace_cached, phases), key=lambda r: r.peak_bytes + r.rebuild_bytes)


def clear_cache() -> None:
    """Forget every estimate and trace (tests that count traces start from here)."""
    with _TRACE_LOCK:
        _ESTIMATES.clear()
        _trace_cached.cache_clear()


@lru_cache(maxsize=512)
def _trace_cached(spec: TraceSpec) -> TraceResult:
    return trace(spec)


def trace_spec(
    config: SaeConfig, per_rank_batch: int, device_type: DeviceType, *, world_size: int = 1
) -> TraceSpec:
    """The step of the run's main phase, with a fixed value wherever the architecture does
    not read a field (k and the sparse decoder outside the TopK family, AuxK too)."""
    on_cuda = device_type == "cuda"
    k_sparse = config.architecture in ("topk", "batchtopk")
    return TraceSpec(
        d_in=config.d_in,
        d_sae=config.d_sae,
        batch=per_rank_batch,
        dtype=config.dtype,
        foreach=on_cuda,  # torch.optim.Adam's default for CUDA parameters; CPU uses the loop
        block_bytes=CUDA_BLOCK_BYTES if on_cuda else 1,
        ddp=uses_ddp(world_size),
        gradient_as_bucket_view=config.ddp.gradient_as_bucket_view,
        architecture=config.architecture,
        k=config.k if k_sparse else 1,
        sparse_decoder=config.sparse_kernels if k_sparse else False,
        clip_grad=config.grad_clip_norm_value is not None,
        aux_k=k_sparse and config.aux_k_coefficient > 0,
    )


def _assemble(key: EstimateKey, r: TraceResult) -> MemoryEstimate:
    spec, world_size, device_type = key.phases[0], key.world_size, key.device_type
    on_cuda = device_type == "cuda"
    workspace = CUBLAS_HANDLES * CUBLAS_WORKSPACE_BYTES if on_cuda else 0
    reserve = _reserve(world_size, device_type)
    tracking = _tracking_bytes(spec.d_sae, spec.architecture, CUDA_BLOCK_BYTES if on_cuda else 1)
    peak_step = r.peak_bytes + r.rebuild_bytes + workspace + tracking
    return MemoryEstimate(
        bytes_per_device=peak_step + reserve,
        peak_step_bytes=peak_step,
        breakdown=[
            *_traced_components(spec, r),
            MemoryComponent(
                name="latent_tracking",
                bytes=tracking,
                note="per-latent firing state kept between steps (dead latents, sparsity)",
            ),
            *_added_components(workspace, reserve),
        ],
        method=_method(device_type),
        world_size=world_size,
        per_rank_batch=spec.batch,
        dtype=spec.dtype,
        device_type=device_type,
    )


def _traced_components(spec: TraceSpec, r: TraceResult) -> list[MemoryComponent]:
    kinds = r.peak_by_kind
    # Buckets and the batch are tracked as "Other"; with gradient_as_bucket_view a bucket is
    # re-tagged "Gradient" once it holds one. Their sum does not depend on that, so split it.
    gradients = kinds["Gradient"] + kinds["Other"] - r.batch_bytes - r.bucket_bytes
    opt_at_peak = kinds["Optstate"]  # MemTracker also files the step's temporaries here
    state = min(opt_at_peak, r.optimizer_state_bytes)
    temporaries = kinds["Temp"] + opt_at_peak - state
    rows = [
        ("parameters", kinds["Parameter"] + kinds["Buffer"], "W_enc, b_enc, W_dec, b_dec"),
        ("gradients", gradients, "parameter gradients live at the peak"),
        ("optimizer_state", state, "Adam exp_avg, exp_avg_sq and step"),
        ("activations", kinds["Activation"], "forward outputs kept for backward"),
        ("temporaries", temporaries, "backward and optimizer-step intermediates at the peak"),
        ("input_batch", r.batch_bytes, f"{spec.batch} x {spec.d_in} per rank"),
        ("ddp_buckets", r.bucket_bytes, _bucket_note(spec.gradient_as_bucket_view)),
        (
            "ddp_bucket_rebuild",
            r.rebuild_bytes,
            "first iteration's bucket, held by the last all-reduce while step 2 rebuilds buckets",
        ),
    ]
    return [MemoryComponent(name=n, bytes=b, note=note) for n, b, note in rows]


def latent_tracking_bytes(config: SaeConfig, block_bytes: int) -> int:
    """What the trainer keeps on the device beside the step, d_sae values each (train.py):
    the metrics' last firing step (int64), the firing counts since the last checkpoint
    (float64), and for the TopK family the dead-latent state (steps since fired, int64;
    running frequency, float64); plus the first-non-finite-step scalar. Outside the trace,
    which runs train_step alone (0.02 % of the estimate at d_sae 12,288)."""
    return _tracking_bytes(config.d_sae, config.architecture, block_bytes)


def _tracking_bytes(d_sae: int, architecture: str, block_bytes: int) -> int:
    tensors = [8 * d_sae, 8 * d_sae, 8]
    if architecture in ("topk", "batchtopk"):
        tensors += [8 * d_sae, 8 * d_sae]
    return sum(rounded(n, block_bytes) for n in tensors)


def _added_components(workspace: int, reserve: int) -> list[MemoryComponent]:
    return [
        MemoryComponent(
            name="cublas_workspace",
            bytes=workspace,
            note="cuBLAS workspaces of the forward and backward threads, Hopper's size; inside "
            "the allocator",
        ),
        MemoryComponent(
            name="framework_reserve",
            bytes=reserve,
            note="outside the allocator: CUDA context 640 MiB, NCCL 576 MiB (H200: 612 and 558; "
            "a world of one makes no collective, its NCCL share is to be re-measured)",
        ),
    ]


def _reserve(world_size: int, device_type: DeviceType) -> int:
    if device_type != "cuda":
        return 0
    # NCCL on one rank too, for now: measured with the DDP the trainer no longer makes there;
    # an overcount until a GPU run measures a one-rank process (docs/memory.md).
    return CUDA_CONTEXT_BYTES + NCCL_BYTES


def _bucket_note(gradient_as_bucket_view: bool) -> str:
    if gradient_as_bucket_view:
        return "DDP buckets; gradients are views into them (gradient_as_bucket_view=True)"
    return "DDP buckets beside the gradients (gradient_as_bucket_view=False)"


def _method(device_type: DeviceType) -> str:
    rounding = (
        "buffers rounded to 512 B as the CUDA caching allocator does"
        if device_type == "cuda"
        else "CPU allocator, no rounding"
    )
    adam = (
        "Adam foreach=True (CUDA default)"
        if device_type == "cuda"
        else "Adam single-tensor loop (CPU default)"
    )
    return (
        "fake-tensor trace of 2 real train_step calls (FakeTensorMode + MemTracker, "
        f"torch {TORCH_VERSION}); {adam}; {rounding}; eager in-place gradient accumulation "
        "restored; with more than one rank, DDP Reducer buckets emulated by hooks, plus the old "
        "bucket that can outlive their rebuild in step 2 (worst case); cuBLAS workspace and "
        "framework reserve added as constants (docs/memory.md)"
    )


def heuristic_bytes(config: SaeConfig, world_size: int = 1) -> int:
    """The common rule of thumb (params x bytes x 4 + batch x d_in x bytes x 2). Not an estimate:
    it misses the batch x d_sae activations; kept to show how far off it is (bench/estimate.py)."""
    itemsize = 2 if config.dtype == "bfloat16" else 4
    params = 2 * config.d_in * config.d_sae + config.d_in + config.d_sae
    return params * itemsize * 4 + config.batch_size // world_size * config.d_in * itemsize * 2


def max_batch_size(
    config: SaeConfig,
    world_size: int,
    bytes_free_per_device: int,
    *,
    safety_margin_bytes: int = 0,
    device_type: DeviceType = "cuda",
) -> int:
    """The largest global batch (a multiple of world_size) whose estimate fits; 0 if none does.

    The peak is a maximum of terms affine in the batch, so two traces give a line to solve;
    the answer is then checked (and stepped) against real traces, which the cache keeps.
    """
    budget = bytes_free_per_device - safety_margin_bytes
    limit = 1_048_576 // world_size  # SaeConfig.batch_size's bound, per rank

    def fits(per_rank: int) -> bool:
        return _bytes_at(config, per_rank, world_size, device_type) <= budget

    if not fits(1):
        return 0
    if fits(limit):
        return limit * world_size
    guess = _affine_guess(config, world_size, device_type, budget, limit)
    low, high = _bracket(fits, guess, limit)
    while high - low > 1:  # invariant: fits(low) and not fits(high)
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low * world_size


def _affine_guess(
    config: SaeConfig, world_size: int, device_type: DeviceType, budget: int, limit: int
) -> int:
    a, b = min(1024, limit // 2), min(2048, limit)
    f_a, f_b = (_bytes_at(config, n, world_size, device_type) for n in (a, b))
    slope = (f_b - f_a) / max(b - a, 1)
    if slope <= 0:
        return limit
    return max(1, min(limit, int(a + (budget - f_a) / slope)))


def _bytes_at(config: SaeConfig, per_rank: int, world_size: int, device_type: DeviceType) -> int:
    resized = config.model_copy(update={"batch_size": per_rank * world_size})
    return estimate_sae(resized, world_size, device_type=device_type).bytes_per_device


def _bracket(fits: Callable[[int], bool], guess: int, limit: int) -> tuple[int, int]:
    """(low, high) with fits(low) true and fits(high) false, found by galloping from guess."""
    step = 1  # the affine guess is usually exact or off by a few
    if fits(guess):
        low = guess
        while low + step < limit and fits(low + step):
            low, step = low + step, step * 2
        return low, min(limit, low + step)
    high = guess
    while high - step > 1 and not fits(high - step):
        high, step = high - step, step * 2
    return max(1, high - step), high
