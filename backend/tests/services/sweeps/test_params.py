"""A sweep's members from its parameters: grid, zip and random, and dotted config paths."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from gpudeck.schemas.sweeps import SweepParameters
from gpudeck.services.sweeps.params import TooManyMembers, members, swept, with_values


def params(**body: object) -> SweepParameters:
    return SweepParameters.model_validate(body)


def test_a_grid_is_every_combination_its_first_parameter_slowest() -> None:
    found = members(params(grid={"k": [8, 16], "lr": [1e-3, 4e-3, 1e-2]}))
    assert found == [
        {"k": 8, "lr": 1e-3}, {"k": 8, "lr": 4e-3}, {"k": 8, "lr": 1e-2},
        {"k": 16, "lr": 1e-3}, {"k": 16, "lr": 4e-3}, {"k": 16, "lr": 1e-2},
    ]  # fmt: skip


def test_zip_lists_advance_together_within_each_grid_combination() -> None:
    found = members(params(grid={"seed": [1, 2]}, zip={"k": [8, 16], "d_sae": [256, 512]}))
    assert found == [
        {"seed": 1, "k": 8, "d_sae": 256}, {"seed": 1, "k": 16, "d_sae": 512},
        {"seed": 2, "k": 8, "d_sae": 256}, {"seed": 2, "k": 16, "d_sae": 512},
    ]  # fmt: skip


def test_random_draws_are_seeded_and_inside_their_bounds() -> None:
    body = {
        "random": {
            "lr": {"distribution": "log_uniform", "low": 1e-4, "high": 1e-2},
            "k": {"distribution": "int", "low": 4, "high": 32},
            "architecture": {"distribution": "choice", "values": ["topk", "batchtopk"]},
            "l1": {"distribution": "uniform", "low": 0.0, "high": 1.0},
        },
        "count": 50,
        "seed": 7,
    }
    first, again = members(params(**body)), members(params(**body))
    assert first == again and len(first) == 50  # the same seed, the same members
    assert all(1e-4 <= m["lr"] <= 1e-2 and 4 <= m["k"] <= 32 for m in first)
    assert all(isinstance(m["k"], int) and 0.0 <= m["l1"] <= 1.0 for m in first)
    assert {m["architecture"] for m in first} == {"topk", "batchtopk"}
    logs = sorted(math.log10(m["lr"]) for m in first)
    assert logs[0] < -3.3 and logs[-1] > -2.7  # log-uniform spreads over the decades
    assert members(params(**{**body, "seed": 8})) != first


def test_dotted_paths_set_nested_fields_in_a_copy() -> None:
    base = {"steps": 10, "dataset": {"type": "synthetic", "num_features": 32}}
    changed = with_values(base, {"dataset.num_features": 64, "optim.betas.b1": 0.9})
    assert changed["dataset"] == {"type": "synthetic", "num_features": 64}
    assert changed["optim"] == {"betas": {"b1": 0.9}}
    assert base["dataset"]["num_features"] == 32  # type: ignore[index]


def test_too_many_members_or_a_bad_shape_is_refused() -> None:
    with pytest.raises(TooManyMembers):
        members(params(grid={"a": list(range(40)), "b": list(range(40))}))
    for body, says in (
        ({}, "at least one parameter"),
        ({"zip": {"a": [1, 2], "b": [1]}}, "one length"),
        ({"random": {"a": {"distribution": "uniform", "low": 0, "high": 1}}}, "needs a count"),
        ({"grid": {"a": [1]}, "count": 3}, "count goes with random"),
        ({"grid": {"a b": [1]}}, "not a config path"),
        ({"random": {"a": {"distribution": "log_uniform", "low": 0.0, "high": 1.0}}, "count": 2},
         "above 0"),
        ({"random": {"a": {"distribution": "uniform", "low": float("nan"), "high": 1.0}},
          "count": 2}, "finite"),
    ):  # fmt: skip
        with pytest.raises(ValidationError, match=says):
            SweepParameters.model_validate(body)


def test_what_was_swept_is_said_with_its_values_or_its_range() -> None:
    """The sweeps list's words: values to 3 significant figures, a long list shortened with its
    length, a random draw by its range and distribution."""
    spec = params(
        grid={"k": [8, 16, 32, 64, 128, 256, 512, 1024]},
        zip={"d_sae": [512, 1024]},
        random={
            "lr": {"distribution": "log_uniform", "low": 1e-4, "high": 0.0032802640616790657},
            "l1": {"distribution": "uniform", "low": 0.5, "high": 2.0},
            "seed": {"distribution": "int", "low": 1, "high": 9},
            "act": {"distribution": "choice", "values": ["relu", "gelu"]},
        },
        count=4,
    )
    said = swept(spec)
    assert [p.text for p in said] == [
        "k 8, 16, 32, 64, …, 1024 (8 values)",
        "d_sae 512, 1024 (zip)",
        "lr 0.0001 to 0.00328 log-uniform",
        "l1 0.5 to 2 uniform",
        "seed 1 to 9 integers",
        "act one of relu, gelu",
    ]
    assert [(p.path, p.how) for p in said][2] == ("lr", "log_uniform")
    assert said[2].low == 1e-4 and said[2].high == 0.0032802640616790657  # exact in the API
    assert said[0].values == [8, 16, 32, 64, 128, 256, 512, 1024]
