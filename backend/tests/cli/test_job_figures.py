"""`gpudeck show`'s figures: each summary metric's newest value, and a bar chart in text."""

from __future__ import annotations

from gpudeck.cli.job_figures import bar_lines, figure_rows, latest_values

KIND = {"summary_metrics": [{"metric": "l0", "label": "L0"}, {"metric": "mmcs", "label": "mmcs"}]}
CHART = {
    "title": "Feature density",
    "series": [{"metric": "never", "label": "never"}, {"metric": "b1", "label": "-0.5"}],
}


def test_the_newest_value_of_each_metric_and_only_those_reported() -> None:
    latest = latest_values([{"metrics": {"l0": 9.0, "never": 1}}, {"metrics": {"l0": 5.0}}])
    assert latest == {"l0": 5.0, "never": 1}
    assert figure_rows(KIND, latest) == [("L0", "5")]


def test_a_count_says_the_steps_it_is_over() -> None:
    # a 400-step SAE's dead count is over its 400 steps, not the 1,000 of a longer run
    kind = {"summary_metrics": [{"metric": "dead", "label": "dead", "window_metric": "window"}]}
    assert figure_rows(kind, {"dead": 12.0, "window": 400.0}) == [("dead", "12 (last 400 steps)")]
    assert figure_rows(kind, {"dead": 3.0, "window": 1000.0}) == [("dead", "3 (last 1,000 steps)")]
    assert figure_rows(kind, {"dead": 3.0}) == [("dead", "3")]  # a job from before the window


def test_bars_are_as_long_as_their_share_of_the_largest() -> None:
    lines = bar_lines(CHART, {"never": 2.0, "b1": 8.0})
    assert lines[0] == "Feature density"
    assert lines[1] == f"  never {'#' * 10:<40} 2"
    assert lines[2] == f"   -0.5 {'#' * 40} 8"
    assert bar_lines(CHART, {}) == []  # nothing reported yet
