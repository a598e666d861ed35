"""A metric against a sweep's parameters: the best member, each parameter's rank correlation
with the metric, and whether the best lies at the edge of the range searched ("lr best at the
top of the range searched: widen it"). Pure: the members and the spec in, figures out.

The importance shown is Spearman's rank correlation, named as such: it sees a monotone trend of
one parameter at a time, not interactions (fANOVA would, with a fitted model and many more
members than a sweep usually has; Optuna's plot_param_importances makes the same trade-off
the other way)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import JsonValue

from gpudeck.schemas.sweeps import ParameterEffect, SweepAnalysis, SweepMember
from gpudeck.services.errors import InvalidInput

IMPORTANCE = (
    "|Spearman rank correlation| of each parameter with the metric over the members measured: "
    "a monotone trend of one parameter at a time, not interactions"
)
EDGE_LEAST_VALUES = 3  # with 2 values tried, the best is always at an edge: nothing to say
LOG_AXIS_RATIO = 10.0  # positive values spanning a decade or more read better on a log axis


def better_of(metric: str) -> Literal["min", "max"]:
    """Lower is better for losses, L0, dead latents and errors; higher for the rest (as the
    page's axis pickers assume)."""
    lowered = metric.lower()
    if any(w in lowered for w in ("loss", "mse", "dead", "error")) or lowered.endswith("l0"):
        return "min"
    return "max"


def default_metric(members: Sequence[SweepMember], summary: Sequence[str]) -> str | None:
    """The metric a sweep is read on: explained variance on held-out rows where reported, else
    on training batches, else the kind's first summary metric any member reported."""
    reported = [m for m in summary if any(m in member.metrics for member in members)]
    for name in sorted(reported, key=lambda m: not m.startswith("heldout")):
        if "explained_variance" in name:
            return name
    return reported[0] if reported else None


def analyse(
    members: Sequence[SweepMember],
    spec: dict[str, Any],
    metric: str,
    better: Literal["min", "max"] | None = None,
) -> SweepAnalysis:
    """The members that succeeded with the metric (while none has: those running, at their
    newest figure) against each swept parameter."""
    better = better or better_of(metric)
    done = [m for m in members if m.status == "succeeded" and _finite(m.metrics.get(metric))]
    running = [m for m in members if m.status == "running" and _finite(m.metrics.get(metric))]
    if not done and not running and not any(metric in m.metrics for m in members):
        raise InvalidInput([("metric", f"no member of this sweep reports {metric!r}")])
    used = done or running
    sign = 1.0 if better == "max" else -1.0
    best = max(used, key=lambda m: (sign * m.metrics[metric], -m.index), default=None)
    searched = _searched(spec)
    paths = list(dict.fromkeys([*searched, *(p for m in members for p in m.params)]))
    return SweepAnalysis(
        metric=metric,
        better=better,
        measured=len(used),
        running=0 if done else len(running),
        best_job_id=best.job_id if best else None,
        best_index=best.index if best else None,
        best_value=best.metrics[metric] if best else None,
        importance=IMPORTANCE,
        parameters=[_effect(path, used, best, metric, searched.get(path)) for path in paths],
    )


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _number(value: JsonValue) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok and math.isfinite(float(value)) else None  # type: ignore[arg-type]


def _searched(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per path, how the spec searched it: {"values": [...]} for grid and zip, the random
    parameter's fields for random."""
    parameters = spec.get("parameters") or {}
    out: dict[str, dict[str, Any]] = {}
    for group in ("grid", "zip"):
        for path, values in (parameters.get(group) or {}).items():
            out[path] = {"values": values}
    for path, drawn in (parameters.get("random") or {}).items():
        out[path] = dict(drawn)
    return out


def _effect(
    path: str,
    used: Sequence[SweepMember],
    best: SweepMember | None,
    metric: str,
    searched: dict[str, Any] | None,
) -> ParameterEffect:
    pairs = [(_number(m.params.get(path)), m.metrics[metric]) for m in used]
    numeric = bool(pairs) and all(x is not None for x, _ in pairs)
    xs = [x for x, _ in pairs if x is not None]
    low, high = _range(searched, xs)
    log_axis = numeric and low is not None and high is not None and low > 0 and (
        (searched or {}).get("distribution") == "log_uniform" or high / low >= LOG_AXIS_RATIO
    )  # fmt: skip
    best_value = best.params.get(path) if best else None
    edge = _edge(_number(best_value), xs) if numeric else None
    return ParameterEffect(
        path=path,
        numeric=numeric,
        log_axis=log_axis,
        low=low,
        high=high,
        best_value=best_value,
        edge=edge,
        rank_correlation=spearman(xs, [y for _, y in pairs]) if numeric else None,
        note=_note(path, edge, best_value, low, high),
    )


def _range(
    searched: dict[str, Any] | None, xs: Sequence[float]
) -> tuple[float | None, float | None]:
    searched = searched or {}
    if searched.get("low") is not None and searched.get("high") is not None:
        return float(searched["low"]), float(searched["high"])
    values = [v for v in (_number(v) for v in searched.get("values") or xs) if v is not None]
    return (min(values), max(values)) if values else (None, None)


def _edge(best: float | None, xs: Sequence[float]) -> Literal["top", "bottom"] | None:
    if best is None or len(set(xs)) < EDGE_LEAST_VALUES:
        return None
    if best == max(xs):
        return "top"
    return "bottom" if best == min(xs) else None


def _note(
    path: str, edge: str | None, best: JsonValue, low: float | None, high: float | None
) -> str | None:
    if edge is None or low is None or high is None:
        return None
    way = "upward" if edge == "top" else "downward"
    return (
        f"{path} best at the {edge} of the range searched ({_short(best)} of "
        f"{_short(low)} to {_short(high)}): widen it {way}"
    )


def _short(value: JsonValue) -> str:
    """3 significant figures, as the page shows them (0.0032802640616790657 -> 0.00328)."""
    number = _number(value)
    return f"{number:.3g}" if number is not None else str(value)


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rank correlation (ties share their mean rank); None for fewer than 3 pairs
    or a constant side."""
    if len(xs) < EDGE_LEAST_VALUES or len(xs) != len(ys):
        return None
    rx, ry = _ranks(xs), _ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    if vx == 0 or vy == 0:
        return None
    return cov / math.sqrt(vx * vy)


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks
