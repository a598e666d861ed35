"""`gpudeck show`: a script job's peak host memory per rank, its limit, and the advice."""

from __future__ import annotations

from gpudeck.cli.job_commands import _memory_rows

MIB = 1024**2


def test_show_lists_each_rank_peak_the_limit_and_the_advice() -> None:
    advice = "peak 600 MiB of 2 GiB declared as host memory: 768 MiB would do (host_memory_bytes)"
    job = {
        "rank_memory": {
            "host_limit_bytes": 2048 * MIB,
            "exceeded": False,
            "ranks": [
                {"rank": 0, "host_peak_rss_bytes": 300 * MIB},
                {"rank": 1, "host_peak_rss_bytes": 310 * MIB},
            ],
            "device_peak_bytes": {"1": 3 * 1024 * MIB, "0": 5 * 1024 * MIB},
        },
        "advice": [advice],
    }
    assert _memory_rows(job) == [
        ("host memory limit", "2 GiB"),
        ("rank 0 host peak", "300 MiB"),
        ("rank 1 host peak", "310 MiB"),
        ("rank 0 device peak", "5 GiB"),
        ("rank 1 device peak", "3 GiB"),
        ("advice", advice),
    ]


def test_a_job_that_measured_nothing_shows_no_memory_rows() -> None:
    assert _memory_rows({"rank_memory": None, "advice": []}) == []
