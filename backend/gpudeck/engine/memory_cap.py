"""A rank's own cap on device memory: its allocator held to its job's reservation on a shared
device, so that running over it is an out-of-memory error in the rank (a traceback the job keeps)
rather than the sampler's SIGKILL (telemetry/watchdog.py), which stays as the guard for what the
allocator does not see (a script's own allocator, other libraries, the CUDA context).

`torch.cuda.set_per_process_memory_fraction` bounds what PyTorch's caching allocator may reserve
on the current device to `fraction * total memory`. The CUDA context (a few hundred MiB) lives
outside the allocator, so the cap leaves the reservation's context reserve out: allocator plus
context then fit the reservation, and the allocator's refusal comes before the watchdog's kill.
"""

from __future__ import annotations

import torch


def cap_allocator(
    reserved_bytes: int, device_total_bytes: int, *, context_reserve_bytes: int = 0
) -> float:
    """Cap this process's allocator on its current CUDA device to its reservation and return
    the fraction set; on CPU (no CUDA) a no-op returning 1.0. `device_total_bytes` is the
    device's total memory as CUDA reports it (`torch.cuda.mem_get_info()[1]`, NVML's total);
    `context_reserve_bytes` is the part of the reservation set aside for the CUDA context."""
    if reserved_bytes <= 0 or device_total_bytes <= 0:
        raise ValueError("reserved and total bytes must be positive")
    if not 0 <= context_reserve_bytes < reserved_bytes:
        raise ValueError("the context reserve must be smaller than the reservation")
    if not torch.cuda.is_available():
        return 1.0
    fraction = min(1.0, (reserved_bytes - context_reserve_bytes) / device_total_bytes)
    torch.cuda.set_per_process_memory_fraction(fraction, torch.cuda.current_device())
    return fraction
