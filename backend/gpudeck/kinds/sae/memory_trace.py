"""Trace real SAE training steps on fake tensors and record the peak of live device memory.

Nothing is allocated: the model, the Adam state and the batch are `FakeTensorMode` tensors and
`MemTracker` (torch.distributed._tools) adds up the storages they would occupy, op by op.
Three corrections make the trace match what the real step holds:

- Fake tensors live on `cpu` (autograd on fake `cuda` tensors aborts in a CPU-only build), so
  the CUDA caching allocator's rounding is applied here: every buffer is rounded up to 512 B
  (kMinBlockSize in c10/cuda/CUDACachingAllocator.cpp).
- Eager autograd sums two gradients flowing into one tensor in place when it holds the last
  reference (InputBuffer::accumulate). It never does so while a dispatch mode is active
  (`isTensorSubclassLike` is true for every tensor then), so under MemTracker each such sum
  allocates a third buffer. We drop the peak sample of a backward `add` whose addend dies at
  once: eager would have reused that addend's buffer.
- With more than one rank the trainer wraps the model in DDP (a world of one steps the bare
  model, `ddp=False`). Its Reducer owns flat gradient buckets the size of all
  parameters and copies each gradient into them as it becomes ready (and with
  gradient_as_bucket_view=True swaps the gradient for the bucket view). Hooks reproduce exactly
  those allocations and copies; the all-reduce itself works in place and allocates nothing.

One more term is not in the step's own allocations, so the trace reports it beside the peak
(`rebuild_bytes`): DDP's first iteration reduces all gradients in one flat bucket, and the
forward of the second rebuilds the buckets in backward order. The process group's last
all-reduce still references the old bucket (gloo's worker thread holds its work until it is
scheduled again after completing the future; NCCL's watchdog keeps its work until it polls),
so on a busy machine the old bucket is freed only after the new ones exist, as late as the
end of the second step. The highest peak a run can reach is the second step's plus that bucket.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed._tools.mem_tracker as mem_tracker_module
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed._tools.mem_tracker import MemTracker

from gpudeck.kinds.sae.arch import build_sae
from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.sae.model import train_step

CUDA_BLOCK_BYTES = 512  # c10/cuda/CUDACachingAllocator.cpp: kMinBlockSize
TRACED_STEPS = 2  # the first creates Adam's state, the second is a steady-state step
# MemTracker patches UntypedStorage.resize_ globally, we patch its size rule: one trace at a time.
_TRACE_LOCK = threading.Lock()


@dataclass(frozen=True)
class TraceSpec:
    """Everything that changes what one rank allocates in a step, and nothing else: it is the
    trace cache's key, so a field here that does not change memory costs a trace per value.

    Left out, because the step allocates the same whatever their values (model.train_step on
    fake tensors has no data, so only a Python branch on a value could change what it
    allocates): the learning rate and Adam's betas (plain floats in Adam's update; its
    branches are on weight_decay and amsgrad, which the trainer never sets), the sparsity
    coefficient (a scalar product in every architecture, zero included), the clipping norm's
    value (clip_grad_norm_ always scales: only whether it clips counts), and the thresholds,
    bandwidths and rates of the architectures (scalars in the step). The AuxK coefficient
    counts as zero or not: at zero auxk_loss returns before its top-k and decode.
    """

    d_in: int
    d_sae: int
    batch: int  # per rank
    dtype: str
    foreach: bool  # Adam's default on CUDA is foreach=True, on CPU the per-tensor loop
    block_bytes: int  # allocator rounding: 512 on CUDA, 1 on CPU
    ddp: bool  # the trainer wraps in DDP when the world has more than one rank
    gradient_as_bucket_view: bool = True
    architecture: str = "standard"
    k: int = 1  # topk, batchtopk; jumprelu's only in its warm-up phase
    sparse_decoder: bool = True  # topk, batchtopk (SaeConfig.sparse_kernels)
    topk_warm_up: bool = False  # trace the TopK warm-up's step (batchtopk, jumprelu)
    clip_grad: bool = False  # the trainer clips the gradient's norm (at any value)
    aux_k: bool = True  # topk, batchtopk: the AuxK loss is on (its coefficient is not 0)


# What the trace steps with where only the value's kind matters (see TraceSpec).
TRACE_COEFFICIENT = 1.0
TRACE_CLIP_NORM = 1.0


def spec_model_config(spec: TraceSpec) -> SaeConfig:
    """The SaeConfig fields that shape the model (everything else does not change memory)."""
    return SaeConfig.model_validate(
        {
            "d_in": spec.d_in,
            "d_sae": spec.d_sae,
            "dtype": spec.dtype,
            "architecture": spec.architecture,
            "k": spec.k,
            "sparse_decoder": spec.sparse_decoder,
            "aux_k_coefficient": 1.0 if spec.aux_k else 0.0,
        }
    )


def worst_dead_mask(spec: TraceSpec) -> torch.Tensor | None:
    """The TopK family's AuxK runs only with dead latents: trace it with all of them dead,
    its most expensive case."""
    if spec.architecture in ("topk", "batchtopk"):
        return torch.ones(spec.d_sae, dtype=torch.bool)
    return None


@dataclass(frozen=True)
class TraceResult:
    peak_bytes: int
    peak_by_kind: dict[str, int]  # MemTracker's categories at the peak moment
    parameter_bytes: int
    optimizer_state_bytes: int  # Adam's persistent state after the steps
    batch_bytes: int
    bucket_bytes: int
    rebuild_bytes: int  # the first iteration's flat bucket, alive at worst through step 2


def rounded(nbytes: int, block_bytes: int) -> int:
    return -(-nbytes // block_bytes) * block_bytes


def tensor_bytes(t: torch.Tensor, block_bytes: int) -> int:
    return rounded(t.untyped_storage().nbytes(), block_bytes)


@contextmanager
def _allocator_rounding(block_bytes: int) -> Iterator[None]:
    """Make MemTracker round every storage as the CUDA caching allocator does, on cpu tensors."""
    base = mem_tracker_module._WeakRefInfo

    class _Rounded(base):  # type: ignore[misc, valid-type]
        def _calculate_mem_consumed(self) -> int:
            return rounded(self.size * self.element_size, block_bytes)

    mem_tracker_module._WeakRefInfo = _Rounded  # type: ignore[misc]
    try:
        yield
    finally:
        mem_tracker_module._WeakRefInfo = base  # type: ignore[misc]


class _EagerAccumulationTracker(MemTracker):
    """MemTracker that does not count the third buffer of an out-of-place gradient sum."""

    def __init__(self) -> None:
        super().__init__()
        self._deferring = False
        self._pending: tuple[Any, Any, list[weakref.ref[Any]]] | None = None

    def _update_peak_stats(self, peak_state: Any) -> None:
        if self._deferring:  # hold the sample until we know whether eager would have made it
            self._pending = (deepcopy(self._curr_mem_snap), peak_state, [])
            return
        super()._update_peak_stats(peak_state)

    def settle(self) -> None:
        if self._pending is None:
            return
        snapshot, peak_state, addends = self._pending
        self._pending = None
        if any(ref() is None for ref in addends):
            return  # an addend died right after the sum: eager would have added into it
        live, self._curr_mem_snap = self._curr_mem_snap, snapshot
        try:
            super()._update_peak_stats(peak_state)
        finally:
            self._curr_mem_snap = live

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.settle()
        if not _is_gradient_sum(func, args, kwargs) or not self._mod_tracker.is_bw or self._in_opt:
            return super().__torch_dispatch__(func, types, args, kwargs)
        self._deferring = True
        try:
            result = super().__torch_dispatch__(func, types, args, kwargs)
        finally:
            self._deferring = False
        if self._pending is not None:
            self._pending[2].extend(weakref.ref(t.untyped_storage()) for t in args[:2])
        return result


def _is_gradient_sum(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> bool:
    # InputBuffer::accumulate calls `old_var + var` on two same-shaped gradients.
    return (
        func is torch.ops.aten.add.Tensor
        and not kwargs
        and len(args) == 2
        and all(isinstance(a, torch.Tensor) for a in args)
        and args[0].shape == args[1].shape
        and args[0].dtype == args[1].dtype
    )


def _emulate_ddp_reducer(model: torch.nn.Module, *, as_view: bool) -> list[torch.Tensor]:
    """Bucket memory plus the Reducer's copy of each ready gradient (mark_variable_ready_dense)."""
    buckets = []
    for param in model.parameters():
        bucket = torch.empty_like(param)  # flat buckets hold exactly the parameters' elements
        buckets.append(bucket)

        def copy_into_bucket(p: torch.Tensor, bucket: torch.Tensor = bucket) -> None:
            assert p.grad is not None
            bucket.copy_(p.grad)  # the Reducer's mul_out(bucket_view, grad, 1 / world_size)
            if as_view:
                p.grad = bucket

        param.register_post_accumulate_grad_hook(copy_into_bucket)
    return buckets


def trace(spec: TraceSpec) -> TraceResult:
    """Run `sae_model.train_step` TRACED_STEPS times on fake tensors; report the peak."""
    with _TRACE_LOCK, _allocator_rounding(spec.block_bytes), FakeTensorMode():
        model = build_sae(spec_model_config(spec))
        model.topk_warm_up = spec.topk_warm_up
        dtype = model.W_enc.dtype
        buckets = (
            _emulate_ddp_reducer(model, as_view=spec.gradient_as_bucket_view) if spec.ddp else []
        )
        optimizer = torch.optim.Adam(model.parameters(), foreach=spec.foreach)
        batch = torch.empty(spec.batch, spec.d_in, dtype=dtype)
        tracker = _EagerAccumulationTracker()
        tracker.track_external(model, optimizer, batch, *buckets)
        with tracker:
            for _ in range(TRACED_STEPS):
                _step(model, optimizer, batch, spec)
                tracker.reset_mod_stats()  # MemTracker refuses a second root call otherwise
            tracker.settle()
        (peak,) = tracker.get_tracker_snapshot("peak").values()
        return TraceResult(
            peak_bytes=peak["Total"],
            peak_by_kind={getattr(k, "value", str(k)): v for k, v in peak.items() if k != "Total"},
            parameter_bytes=sum(tensor_bytes(p, spec.block_bytes) for p in model.parameters()),
            optimizer_state_bytes=_state_bytes(optimizer, spec.block_bytes),
            batch_bytes=tensor_bytes(batch, spec.block_bytes),
            bucket_bytes=sum(tensor_bytes(b, spec.block_bytes) for b in buckets),
            rebuild_bytes=_first_bucket_bytes(model, spec) if spec.ddp else 0,
        )


def _step(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, batch: torch.Tensor, spec: TraceSpec
) -> None:
    # The trainer drops the step's output before the next forward (sae.train: `del output`).
    train_step(
        model,
        optimizer,
        batch,
        coefficient=TRACE_COEFFICIENT,
        grad_clip_norm=TRACE_CLIP_NORM if spec.clip_grad else None,
        dead_mask=worst_dead_mask(spec),
    )


def _first_bucket_bytes(model: torch.nn.Module, spec: TraceSpec) -> int:
    # With find_unused_parameters=False DDP's first bucketing has no size cap
    # (BucketCapacityConfig.compute_bucket_size_limits): one flat buffer of every parameter.
    nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
    return rounded(nbytes, spec.block_bytes)


def _state_bytes(optimizer: torch.optim.Optimizer, block_bytes: int) -> int:
    return sum(
        tensor_bytes(value, block_bytes)
        for state in optimizer.state.values()
        for value in state.values()
        if isinstance(value, torch.Tensor)
    )
