"""A script's memory is what its submitter declares: GPUDeck cannot trace a program it does
not know. Placement compares the declaration with each device's free memory."""

from __future__ import annotations

from gpudeck.engine.kinds import DeviceType, MemoryComponent, MemoryEstimate
from gpudeck.kinds.script.config import ScriptConfig


def estimate_memory(
    config: ScriptConfig, world_size: int, device_type: DeviceType = "cuda"
) -> MemoryEstimate:
    per_device = config.memory_per_device_bytes * config.nproc_per_device
    return MemoryEstimate(
        bytes_per_device=per_device,
        peak_step_bytes=per_device,
        breakdown=[MemoryComponent(name="declared", bytes=per_device, note="as submitted")],
        method="declared by the submitter (memory_per_device_bytes x nproc_per_device)",
        world_size=world_size,
        per_rank_batch=0,
        dtype="n/a",
        device_type=device_type,
    )
