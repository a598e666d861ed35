"""services/sweeps/analysis.py: a metric against a sweep's parameters, called directly."""

from __future__ import annotations

from typing import Any

import pytest

from gpudeck.schemas.jobs import Progress
from gpudeck.schemas.sweeps import SweepMember
from gpudeck.services.errors import InvalidInput
from gpudeck.services.sweeps.analysis import analyse, default_metric, spearman


def _member(
    index: int, params: dict[str, Any], status: str = "succeeded", **metrics: float
) -> SweepMember:
    return SweepMember(
        job_id=100 + index, index=index, params=params, name=f"m{index}", status=status,
        progress=Progress(step=1, total=1, rate_per_s=None), error_summary=None,
        metrics=metrics, started_at=None, finished_at=None,
    )  # fmt: skip


def test_spearman_ranks_ties_together_and_refuses_too_few_or_a_constant() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 1, 2, 3], [5, 5, 6, 7]) == pytest.approx(1.0)  # tied ranks 1.5, 1.5
    assert spearman([1, 2], [1, 2]) is None
    assert spearman([1, 2, 3], [7, 7, 7]) is None


def test_the_best_at_the_bottom_of_a_grid_says_widen_it_downward_and_a_loss_is_minimised() -> None:
    spec = {"parameters": {"grid": {"lr": [0.001, 0.01, 0.1], "arch": ["topk", "jumprelu", "x"]}}}
    members = [
        _member(0, {"lr": 0.001, "arch": "topk"}, overall_loss=1.0),
        _member(1, {"lr": 0.01, "arch": "jumprelu"}, overall_loss=2.0),
        _member(2, {"lr": 0.1, "arch": "x"}, overall_loss=3.0),
    ]
    answer = analyse(members, spec, "overall_loss")
    assert (answer.better, answer.best_index, answer.best_value) == ("min", 0, 1.0)
    lr, arch = answer.parameters
    assert (lr.edge, lr.log_axis, lr.low, lr.high) == ("bottom", True, 0.001, 0.1)
    assert (
        lr.note
        == "lr best at the bottom of the range searched (0.001 of 0.001 to 0.1): widen it downward"
    )
    assert (arch.numeric, arch.edge, arch.rank_correlation, arch.note) == (False, None, None, None)


def test_two_values_tried_say_nothing_of_an_edge_and_a_middle_best_is_no_edge() -> None:
    two = [_member(i, {"k": k}, l0=float(k)) for i, k in enumerate([8, 16])]
    assert analyse(two, {}, "l0", "max").parameters[0].edge is None
    three = [
        _member(i, {"k": k}, l0=float(v)) for i, (k, v) in enumerate([(8, 1), (16, 9), (32, 2)])
    ]
    effect = analyse(three, {}, "l0", "max").parameters[0]
    assert (effect.edge, effect.log_axis) == (None, False)  # 8 to 32: under a decade


def test_while_none_has_succeeded_the_running_members_newest_figures_are_used() -> None:
    members = [
        _member(0, {"k": 8}, "running", explained_variance=0.4),
        _member(1, {"k": 16}, "running", explained_variance=0.6),
        _member(2, {"k": 32}, "queued"),
    ]
    answer = analyse(members, {}, "explained_variance")
    assert (answer.measured, answer.running, answer.best_index) == (2, 2, 1)
    finished = [*members, _member(3, {"k": 4}, explained_variance=0.1)]
    assert analyse(finished, {}, "explained_variance").best_index == 3  # the one that finished
    with pytest.raises(InvalidInput):
        analyse(members, {}, "mmcs")


def test_the_default_metric_is_held_out_explained_variance_where_reported() -> None:
    summary = ["overall_loss", "l0", "explained_variance", "heldout_explained_variance"]
    training = [_member(0, {}, overall_loss=1.0, explained_variance=0.5)]
    held_out = [_member(0, {}, explained_variance=0.5, heldout_explained_variance=0.4)]
    assert default_metric(training, summary) == "explained_variance"
    assert default_metric(held_out, summary) == "heldout_explained_variance"
    assert default_metric([_member(0, {}, rows=3.0)], ["rows"]) == "rows"
    assert default_metric([_member(0, {})], summary) is None
