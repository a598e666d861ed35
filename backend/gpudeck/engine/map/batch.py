"""Batch size `auto`: the largest batch whose memory estimate fits the device."""

from __future__ import annotations

from collections.abc import Callable


def auto_batch_size(
    estimate_bytes: Callable[[int], int], free_bytes: int, *, upper: int, safety: float = 0.9
) -> int:
    """Largest b in [1, upper] with estimate_bytes(b) <= safety * free_bytes (at least 1).

    The estimate must grow with b; doubling then bisection calls it O(log upper) times.
    """
    budget = safety * free_bytes
    if upper <= 1 or estimate_bytes(1) > budget:
        return 1
    low, high = 1, 2
    while high < upper and estimate_bytes(high) <= budget:
        low, high = high, high * 2
    high = min(high, upper)
    if estimate_bytes(high) <= budget:
        return high
    while high - low > 1:  # estimate(low) fits, estimate(high) does not
        mid = (low + high) // 2
        low, high = (mid, high) if estimate_bytes(mid) <= budget else (low, mid)
    return low
