"""Restart spacing for a part that keeps dying: doubling, capped, forgotten after a stable run."""

from __future__ import annotations

import logging

import pytest

from gpudeck.cli.parts import Backoff
from gpudeck.cli.supervisor import Supervised


def test_doubles_to_the_cap_and_resets_after_a_stable_run() -> None:
    backoff = Backoff(initial_s=0.5, cap_s=4.0, stable_s=60.0)
    delays = [backoff.delay(ran_for_s=1.0) for _ in range(6)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]  # a part dying forever waits 4 s each time
    assert backoff.delay(ran_for_s=61.0) == 0.5


class CrashingPart:
    """A part that dies the moment it starts, forever."""

    name = "crasher"

    def __init__(self) -> None:
        self.starts = 0

    def start(self) -> None:
        self.starts += 1

    def exit_status(self) -> str:
        return "exit code 1"


def test_a_part_crashing_forever_is_restarted_at_the_capped_pace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    part = CrashingPart()
    supervised = Supervised(part, Backoff(initial_s=0.5, cap_s=30.0))  # type: ignore[arg-type]
    supervised.start(now=0.0)
    with caplog.at_level(logging.INFO, logger="gpudeck.run"):
        for tick in range(int(600 / 0.2)):  # ten minutes of the supervisor's 0.2 s ticks
            supervised.check(now=tick * 0.2)
    # 0.5 + 1 + 2 + 4 + 8 + 16 s, then one start every 30 s: about 25 starts, not 3000.
    assert 20 <= part.starts <= 26
    died = [r.getMessage() for r in caplog.records if "died" in r.getMessage()]
    assert died[0] == "crasher died (exit code 1); restarting it in 0.5 s"
    assert died[-1] == "crasher died (exit code 1); restarting it in 30.0 s"
