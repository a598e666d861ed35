"""Pure planning: which chunks exist, how many ranks take part, and who does which chunk.

Chunk boundaries depend only on the item count and the chunk size, never on the world size
or the strategy: that is what makes the output identical however it was computed.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpudeck.engine.map.options import Strategy


def chunk_bounds(num_items: int, chunk_size: int) -> list[tuple[int, int]]:
    """[start, stop) of each chunk, in input order; the last may be short."""
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    return [(s, min(s + chunk_size, num_items)) for s in range(0, num_items, chunk_size)]


def active_ranks(num_items: int, world_size: int, min_items_per_device: int) -> int:
    """How many ranks get work: each at least min_items_per_device items, and at least one."""
    return max(1, min(world_size, num_items // max(1, min_items_per_device)))


def proportional_shares(weights: Sequence[float], total: int) -> list[int]:
    """`total` split in proportion to `weights` (largest remainder), summing exactly to total."""
    if not weights or any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ValueError("weights must be non-negative with a positive sum")
    scale = total / sum(weights)
    exact = [w * scale for w in weights]
    shares = [int(e) for e in exact]
    by_remainder = sorted(range(len(weights)), key=lambda i: (shares[i] - exact[i], i))
    for i in by_remainder[: total - sum(shares)]:
        shares[i] += 1
    return shares


def _contiguous(shares: Sequence[int]) -> list[list[int]]:
    out, start = [], 0
    for share in shares:
        out.append(list(range(start, start + share)))
        start += share
    return out


def assign(
    num_chunks: int,
    ranks: int,
    strategy: Strategy,
    *,
    weights: Sequence[float] | None = None,
    capacity_chunks: int | None = None,
) -> list[list[int]]:
    """The chunk indices of each of `ranks` ranks, each list ascending (a static plan).

    balanced: contiguous equal shares. memory: contiguous shares proportional to `weights`
    (free memory). sequential: rank 0 takes `capacity_chunks`, then rank 1, ...; the last rank
    takes what is left (no capacity: equal shares). round_robin: chunk i goes to rank i % ranks.
    `dynamic` has no static plan: ranks claim chunks at run time (claim.py).
    """
    if ranks < 1:
        raise ValueError("at least one rank")
    if strategy == "balanced":
        return _contiguous(proportional_shares([1.0] * ranks, num_chunks))
    if strategy == "memory":
        if weights is None or len(weights) != ranks:
            raise ValueError(f"the memory strategy needs one free-memory figure per rank ({ranks})")
        return _contiguous(proportional_shares(weights, num_chunks))
    if strategy == "sequential":
        capacity = capacity_chunks or -(-num_chunks // ranks)
        shares = [min(capacity, max(0, num_chunks - r * capacity)) for r in range(ranks)]
        shares[-1] = num_chunks - sum(shares[:-1])
        return _contiguous(shares)
    if strategy == "round_robin":
        return [list(range(r, num_chunks, ranks)) for r in range(ranks)]
    raise ValueError(f"strategy {strategy!r} has no static plan")
