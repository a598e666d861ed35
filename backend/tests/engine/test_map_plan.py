"""Map planning: chunks cover the input once, every strategy gives every chunk to exactly one
rank in ascending order, the fallback uses fewer ranks, batch size auto fits the budget."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpudeck.engine.map.batch import auto_batch_size
from gpudeck.engine.map.claim import ClaimQueue
from gpudeck.engine.map.options import Strategy
from gpudeck.engine.map.plan import active_ranks, assign, chunk_bounds, proportional_shares

STATIC = [s for s in get_args(Strategy) if s != "dynamic"]


@given(st.integers(0, 5000), st.integers(1, 300))
def test_chunks_cover_the_items_in_order(num_items: int, chunk_size: int) -> None:
    bounds = chunk_bounds(num_items, chunk_size)
    flat = [i for start, stop in bounds for i in range(start, stop)]
    assert flat == list(range(num_items))
    assert all(0 < stop - start <= chunk_size for start, stop in bounds)


@given(
    st.integers(0, 400),
    st.integers(1, 9),
    st.sampled_from(STATIC),
    st.lists(st.integers(1, 10**12), min_size=9, max_size=9),
    st.one_of(st.none(), st.integers(1, 50)),
)
def test_every_chunk_goes_to_exactly_one_rank_in_order(
    num_chunks: int, ranks: int, strategy: Strategy, free: list[int], capacity: int | None
) -> None:
    plan = assign(num_chunks, ranks, strategy, weights=free[:ranks], capacity_chunks=capacity)
    assert len(plan) == ranks
    assert sorted(i for mine in plan for i in mine) == list(range(num_chunks))
    assert all(mine == sorted(mine) for mine in plan)
    if strategy != "round_robin":  # contiguous strategies: rank order is input order
        assert [i for mine in plan for i in mine] == list(range(num_chunks))


def test_the_strategies_share_as_documented() -> None:
    assert assign(10, 3, "balanced") == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert assign(10, 3, "round_robin") == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    assert assign(8, 2, "memory", weights=[3e9, 1e9]) == [list(range(6)), [6, 7]]
    assert assign(10, 3, "sequential", capacity_chunks=4) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert assign(5, 3, "sequential", capacity_chunks=4) == [[0, 1, 2, 3], [4], []]
    with pytest.raises(ValueError, match="one free-memory figure per rank"):
        assign(4, 2, "memory", weights=[1.0])
    with pytest.raises(ValueError, match="no static plan"):
        assign(4, 2, "dynamic")


@given(st.lists(st.floats(0.01, 1e12), min_size=1, max_size=16), st.integers(0, 10_000))
def test_proportional_shares_sum_exactly(weights: list[float], total: int) -> None:
    shares = proportional_shares(weights, total)
    assert sum(shares) == total
    exact = [w * total / sum(weights) for w in weights]
    assert all(abs(s - e) < 1 + 1e-6 for s, e in zip(shares, exact, strict=True))


def test_small_inputs_fall_back_to_fewer_ranks() -> None:
    assert active_ranks(2, 4, 1) == 2
    assert active_ranks(100, 4, 64) == 1
    assert active_ranks(0, 4, 1) == 1
    assert active_ranks(1000, 4, 64) == 4


@given(st.integers(1, 10**9), st.integers(1, 10**12), st.integers(1, 5000))
def test_auto_batch_is_the_largest_that_fits(per_item: int, free: int, upper: int) -> None:
    def estimate(batch: int) -> int:
        return 1000 + per_item * batch

    batch = auto_batch_size(estimate, free, upper=upper)
    assert 1 <= batch <= upper
    budget = 0.9 * free
    if estimate(1) <= budget:
        assert estimate(batch) <= budget
        assert batch == upper or estimate(batch + 1) > budget


def test_the_claim_queue_hands_each_pending_chunk_out_once(tmp_path: Path) -> None:
    queue = ClaimQueue(tmp_path / ".claims", [1, 4, 5])
    queue.reset()
    other = ClaimQueue(tmp_path / ".claims", [1, 4, 5])  # another rank: same file
    assert [queue.claim(), other.claim(), queue.claim(), other.claim()] == [1, 4, 5, None]
