"""The rate a running job's relay measures, which expected starts use
(services/queue/snapshot.py)."""

from __future__ import annotations

from gpudeck.worker.relay import RATE_WINDOW_S, ProgressRate


def test_the_rate_is_measured_from_this_runs_first_step_once_the_window_has_passed() -> None:
    rate = ProgressRate()
    # A resumed job's first step is its checkpoint's (5,000), not 0: counting from 0 would
    # make it look 5,000 steps faster.
    assert rate.add(100.0, 5000) is None
    assert rate.add(100.0 + RATE_WINDOW_S / 2, 5100) is None  # too soon to say
    assert rate.add(100.0 + RATE_WINDOW_S + 10, 5000 + 15 * int(RATE_WINDOW_S + 10)) == 15.0


def test_no_rate_while_the_steps_do_not_move() -> None:
    rate = ProgressRate()
    rate.add(0.0, 10)
    assert rate.add(RATE_WINDOW_S * 3, 10) is None
