"""The CLI's scheduling words: durations a user types for --time-limit, and expected starts as
the queue table prints them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gpudeck.cli.scheduling import parse_duration, relative_start


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("30m", 1800), ("2h", 7200), ("1d", 86400), ("45", 45), (" 2H ", 7200)],
)
def test_durations_a_user_types(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "2 h", "1.5h", "-5m", "2w", "h", "0s"])
def test_bad_durations_say_what_to_type(text: str) -> None:
    with pytest.raises(ValueError, match=r"duration|at least 1 second"):
        parse_duration(text)


NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(seconds=-40), "now"),  # overdue: a running job is past its estimate
        (timedelta(seconds=10), "now"),
        (timedelta(minutes=12, seconds=10), "in ~12 min"),
        (timedelta(minutes=50), "in ~50 min"),
        (timedelta(hours=3, minutes=10), "in ~3 h"),
        (timedelta(days=4), "in ~4 d"),
    ],
)
def test_expected_start_reads_relative(delta: timedelta, text: str) -> None:
    assert relative_start((NOW + delta).isoformat(), now=NOW) == text


def test_unknown_expected_start() -> None:
    assert relative_start(None, now=NOW) == "unknown"


def test_an_expected_start_counted_from_time_limits_reads_as_a_bound() -> None:
    """A job ahead with no measured rate yet is counted for its whole limit: the job likely
    starts sooner, and the CLI says "within" rather than promising a time."""
    at = (NOW + timedelta(hours=3)).isoformat()
    assert relative_start(at, now=NOW, from_time_limits=True) == "within ~3 h"
    assert relative_start(at, now=NOW) == "in ~3 h"
