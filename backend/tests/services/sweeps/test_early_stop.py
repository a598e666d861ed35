"""Early stopping's rules (services/sweeps/early_stop.py), as values: the median rule and ASHA."""

from __future__ import annotations

from gpudeck.schemas.sweeps import EarlyStop
from gpudeck.services.sweeps.early_stop import to_stop, verdict


def curve(values: list[float], every: int = 10) -> list[tuple[int, float]]:
    return [((i + 1) * every, v) for i, v in enumerate(values)]


MEDIAN = EarlyStop(rule="median", metric="mse_loss", mode="min", grace_steps=30, min_peers=3)


def test_the_median_rule_stops_a_member_worse_than_the_median_at_its_step() -> None:
    peers = [curve([5, 4, 3, 2, 1]), curve([5, 4, 3, 2.5, 2]), curve([6, 5, 4, 3, 2])]
    bad = curve([9, 9, 9])  # step 30: best 9 against a median of 3 (bests 3, 3, 4)
    good = curve([5, 3.5, 2.5])
    assert "worse than the median 3 of 3 members" in (verdict(MEDIAN, bad, [], peers) or "")
    assert verdict(MEDIAN, good, [], peers) is None
    assert verdict(MEDIAN, curve([9, 9]), [], peers) is None  # within its grace steps
    assert verdict(MEDIAN, bad, [], peers[:2]) is None  # too few finished members to judge by
    assert verdict(MEDIAN, bad, peers, []) is None  # running members are not the yardstick
    maximise = MEDIAN.model_copy(update={"mode": "max", "metric": "explained_variance"})
    assert verdict(maximise, curve([0.1, 0.1, 0.1]), [], [curve([0.5] * 5)] * 3) is not None


def test_asha_keeps_the_best_third_at_each_rung() -> None:
    rule = EarlyStop(rule="asha", metric="mse_loss", grace_steps=10, reduction_factor=3)
    reached = {1: curve([1.0]), 2: curve([2.0]), 3: curve([3.0]), 4: curve([4.0]), 5: curve([5.0])}
    running = [3, 4, 5, 1]
    stopped = {s.job_id for s in to_stop(rule, running, reached)}
    # Six members would keep 2; of these five, the best one (5 // 3 = 1) goes on.
    assert stopped == {3, 4, 5}
    assert verdict(rule, curve([1.0, 0.5, 0.4]), [curve([2.0])]) is None  # alone: no verdict


def test_a_member_at_its_last_step_is_never_stopped() -> None:
    """A rung can fall on a member's last step (grace 20, factor 2, 40 steps): it has done its
    work by then, and stopping it would call a finished run stopped."""
    rule = EarlyStop(rule="asha", metric="mse_loss", grace_steps=20, reduction_factor=2)
    better = {1: curve([1.0, 0.5, 0.4, 0.3]), 2: curve([0.9, 0.5, 0.4, 0.2])}
    worst_at_40 = curve([5.0, 5.0, 5.0, 5.0])
    assert verdict(rule, worst_at_40, list(better.values())) is not None
    assert verdict(rule, worst_at_40, list(better.values()), total=40) is None
    assert verdict(rule, worst_at_40, list(better.values()), total=80) is not None
    median = MEDIAN.model_copy(update={"min_peers": 2})
    assert verdict(median, worst_at_40, [], list(better.values()), total=40) is None
    curves = {**better, 3: worst_at_40}
    assert to_stop(rule, [3], curves, totals={3: 40}) == []
    assert [s.job_id for s in to_stop(rule, [3], curves, totals={3: None})] == [3]
