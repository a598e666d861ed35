"""Strictness is a property of the kind contract, not of each kind: every registered kind's
config (the built-in ones and the example plugin kind) refuses, at submit, a wrongly typed value
in each of its fields and NaN or infinity in each number, naming the field; whatever the kind's
own model_config says."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpudeck.engine.kinds import JobKind, registry
from gpudeck.services.errors import InvalidInput
from gpudeck.services.submit.checks import validate_config

PLUGIN = Path(__file__).resolve().parents[4] / "examples" / "kinds" / "gpudeck-kind-linreg"


def kinds() -> dict[str, JobKind]:
    return registry()


# JSON Schema type -> values of other types a strict config must refuse for it.
WRONG = {
    "integer": ["16", True, 1.5],
    "number": ["0.1", True],
    "boolean": ["false", 0],
    "string": [16, False],
}
NON_FINITE = [float("nan"), float("inf"), float("-inf")]


def _types(prop: dict[str, Any]) -> set[str]:
    """The JSON types a property admits (its own, or each branch of an anyOf)."""
    if "type" in prop:
        found = prop["type"]
        return set(found if isinstance(found, list) else [found])
    if "anyOf" in prop:
        return set().union(*(_types(branch) for branch in prop["anyOf"]))
    if "enum" in prop or "const" in prop:
        return (
            {"string"}
            if all(isinstance(v, str) for v in prop.get("enum", [prop.get("const")]))
            else set()
        )
    return set()  # a $ref (nested model): its own fields are covered where it is a kind's


def _fields(
    schema: dict[str, Any], defs: dict[str, Any], path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """(path, property schema) of every field, nested models' fields included."""
    for field, prop in schema.get("properties", {}).items():
        branches = [prop, *prop.get("anyOf", []), *prop.get("allOf", [])]
        for branch in branches:
            if "$ref" in branch:
                yield from _fields(defs[branch["$ref"].split("/")[-1]], defs, (*path, field))
        yield (*path, field), prop


def _nested(path: tuple[str, ...], value: object) -> dict[str, Any]:
    config: Any = value
    for part in reversed(path):
        config = {part: config}
    return config  # type: ignore[no-any-return]


def cases() -> Iterator[tuple[str, tuple[str, ...], object]]:
    for name, kind in kinds().items():
        schema = kind.config_model.model_json_schema()
        for path, prop in _fields(schema, schema.get("$defs", {})):
            admitted = _types(prop)
            for json_type in admitted & set(WRONG):
                for value in WRONG[json_type]:
                    if not _admits(admitted, value):  # a string-or-integer field takes "16"
                        yield name, path, value
            if admitted & {"number", "integer"}:
                for value in NON_FINITE:
                    yield name, path, value


def _admits(admitted: set[str], value: object) -> bool:
    kind_of = {bool: "boolean", int: "integer", float: "number", str: "string"}[type(value)]
    return kind_of in admitted or (kind_of == "integer" and "number" in admitted)


@pytest.fixture(scope="module")
def all_cases() -> Iterator[list[tuple[str, tuple[str, ...], object]]]:
    """The example plugin kind registered as an operator would without installing it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(PLUGIN))
        patch.setenv("GPUDECK_KIND_MODULES", "gpudeck_kind_linreg")
        registry.cache_clear()  # read again, with the plugin kind
        yield list(cases())
    registry.cache_clear()


def test_every_kind_field_refuses_wrong_types_and_non_finite_numbers(
    all_cases: list[tuple[str, tuple[str, ...], object]],
) -> None:
    assert {name for name, _, _ in all_cases} >= {"sae", "activations", "map", "script", "linreg"}
    accepted = []
    for name, path, value in all_cases:
        field = ".".join(path)
        try:
            validate_config(name, _nested(path, value), 1)
        except InvalidInput as exc:
            named = {f for f, _ in exc.extra["errors"]}
            if f"config.{field}" not in named and not any(
                f.startswith(f"config.{field}.") for f in named
            ):
                accepted.append((name, field, value, sorted(named)))
            continue
        accepted.append((name, field, value, "accepted"))
    assert not accepted, f"{len(accepted)} wrong values not refused by name: {accepted[:10]}"
    assert len(all_cases) > 100  # the schema walk found the fields
    assert ("map", ("map", "chunk_size"), True) in all_cases  # nested models' fields too


@pytest.mark.parametrize("batch_size", [0, -1, "4", "auto "])
def test_a_map_batch_size_is_a_positive_int_or_auto(batch_size: object) -> None:
    with pytest.raises(InvalidInput) as refused:
        validate_config("map", {"map": {"batch_size": batch_size}}, 1)
    assert "config.map.batch_size" in {f for f, _ in refused.value.extra["errors"]}
