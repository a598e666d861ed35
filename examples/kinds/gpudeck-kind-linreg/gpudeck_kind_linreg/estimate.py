"""Peak memory per rank, by arithmetic: the model is one weight vector, so no trace is needed."""

from __future__ import annotations

from gpudeck.engine.kinds import DeviceType, MemoryComponent, MemoryEstimate
from gpudeck_kind_linreg import LinRegConfig

FLOAT32_BYTES = 4
CUDA_BLOCK_BYTES = 512  # the caching allocator's smallest block
# What a CUDA process holds outside the allocator (context, kernels, NCCL buffers).
CUDA_RESERVE_BYTES = 1024 * 1024**2


def _block(nbytes: int) -> int:
    return -(-nbytes // CUDA_BLOCK_BYTES) * CUDA_BLOCK_BYTES


def estimate(
    config: LinRegConfig, world_size: int = 1, *, device_type: DeviceType = "cuda"
) -> MemoryEstimate:
    per_rank = config.batch_size // world_size
    weight = _block(config.d_in * FLOAT32_BYTES)
    parts = [
        MemoryComponent(name="parameters", bytes=weight, note="w, float32"),
        MemoryComponent(name="gradients", bytes=2 * weight, note="grad and DDP bucket"),
        MemoryComponent(
            name="activations",
            bytes=_block(per_rank * config.d_in * FLOAT32_BYTES) + 3 * _block(per_rank * 4),
            note="x, prediction, target and residual of one rank's batch",
        ),
    ]
    peak = sum(p.bytes for p in parts)
    if device_type == "cuda":
        parts.append(
            MemoryComponent(
                name="framework", bytes=CUDA_RESERVE_BYTES, note="CUDA context and NCCL"
            )
        )
    return MemoryEstimate(
        bytes_per_device=sum(p.bytes for p in parts),
        peak_step_bytes=peak,
        breakdown=parts,
        method="arithmetic over the kind's tensors",
        world_size=world_size,
        per_rank_batch=per_rank,
        dtype="float32",
        device_type=device_type,
    )
