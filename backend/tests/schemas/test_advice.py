"""The advice a finished job gives for the next submission's memory declarations."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpudeck.schemas.advice import GIB, MIB, advise, host_advice, nice_bytes, time_advice

sizes = st.integers(min_value=1, max_value=512 * GIB)


@given(sizes)
def test_a_suggestion_covers_the_peak_with_headroom_in_a_round_figure(peak: int) -> None:
    suggested = nice_bytes(peak * 1.25)
    assert suggested >= peak * 1.25
    assert suggested % (256 * MIB) == 0


def test_too_generous_a_declaration_gets_a_smaller_one() -> None:
    line = advise(int(3.1 * GIB), 8 * GIB, "per rank", "memory_per_device_bytes")
    assert (
        line == "peak 3.1 GiB of 8 GiB declared per rank: 4 GiB would do (memory_per_device_bytes)"
    )


def test_a_peak_past_the_declaration_asks_for_more() -> None:
    line = advise(310 * MIB, 256 * MIB, "per rank", "memory_per_device_bytes")
    said = "peak 310 MiB passed the 256 MiB declared per rank: declare 512 MiB"
    assert line == f"{said} (memory_per_device_bytes)"


def test_a_close_declaration_gets_no_advice() -> None:
    assert advise(7 * GIB, 8 * GIB, "per rank", "memory_per_device_bytes") is None


def test_host_advice_adds_the_ranks_peaks_and_names_an_exceeded_limit() -> None:
    line = host_advice([GIB, GIB], 8 * GIB, exceeded=False)
    assert (
        line == "peak 2 GiB of 8 GiB declared as host memory: 2.5 GiB would do (host_memory_bytes)"
    )
    exceeded = host_advice([GIB], GIB, exceeded=True)
    assert exceeded is not None and "passed its host memory limit of 1 GiB" in exceeded
    assert host_advice([], GIB, exceeded=False) is None


def test_a_time_limit_far_above_the_run_gets_a_tighter_one() -> None:
    line = time_advice(1000, 24 * 3600)
    assert line == (
        "Ran 17 min of its 24 h time limit: a limit of 25 min would do, and lets the scheduler "
        "start it sooner."
    )
    assert time_advice(250, 24 * 3600) is None  # under 10 min: not worth a word
    assert time_advice(3000, 3 * 3600) is None  # within 4x: close enough
