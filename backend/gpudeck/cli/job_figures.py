"""A job's figures in `gpudeck show`: the latest value of each of its kind's summary metrics,
and each bar chart (an SAE evaluation's feature-density histogram) drawn in text."""

from __future__ import annotations

from typing import Any

BAR_WIDTH = 40


def latest_values(points: list[dict[str, Any]]) -> dict[str, float]:
    """Each metric's newest value over the points, oldest first (some metrics come only
    with some points: an SAE's held-out figures at checkpoints)."""
    latest: dict[str, float] = {}
    for point in points:
        latest.update(point["metrics"])
    return latest


def _shown(series: dict[str, Any], latest: dict[str, float]) -> str:
    """The value, and the steps it is counted over where the kind reports them (an SAE's dead
    count: '12 (last 400 steps)' on a 400-step run)."""
    shown = f"{latest[series['metric']]:.4g}"
    window = latest.get(series.get("window_metric") or "")
    if isinstance(window, int | float):
        shown += f" (last {int(window):,} steps)"
    return shown


def figure_rows(kind: dict[str, Any], latest: dict[str, float]) -> list[tuple[str, str]]:
    return [
        (s["label"], _shown(s, latest))
        for s in kind["summary_metrics"]
        if isinstance(latest.get(s["metric"]), int | float)
    ]


def bar_lines(chart: dict[str, Any], latest: dict[str, float]) -> list[str]:
    """One line per series: its label, a bar as long as its share of the largest, its value;
    nothing when none has been reported."""
    values = [(s["label"], latest.get(s["metric"])) for s in chart["series"]]
    if all(v is None for _, v in values):
        return []
    top = max((v for _, v in values if v is not None), default=0.0) or 1.0
    width = max(len(label) for label, _ in values)
    lines = [chart["title"]]
    for label, value in values:
        bar = "#" * round(BAR_WIDTH * (value or 0.0) / top)
        shown = "-" if value is None else f"{value:g}"
        lines.append(f"  {label:>{width}} {bar:<{BAR_WIDTH}} {shown}")
    return lines
