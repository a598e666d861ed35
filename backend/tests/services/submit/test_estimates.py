"""One submission's estimates: members that read the same to their kind's estimate (its
`estimate_fields`) are estimated once, whatever differs elsewhere; the others apart. Calls
and traces are counted by wrapping the real functions."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from gpudeck.engine.kinds import JobKind
from gpudeck.kinds.sae import memory as sae_memory
from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.script import memory as script_memory
from gpudeck.services.submit.checks import validate_config
from gpudeck.services.submit.estimates import EstimateMemo, estimate_bytes_per_device, estimate_view

SAE = {"d_in": 16, "d_sae": 64, "batch_size": 64, "steps": 10}
SCRIPT = {"entrypoint": "train.py", "memory_per_device_bytes": 2**30}


def counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[Any]:
    """Every call of module.name from here on (the real function still runs)."""
    calls: list[Any] = []
    real: Callable[..., Any] = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return calls


@pytest.fixture
def sae_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[Any], list[Any]]]:
    """(calls of the sae kind's estimate, traces), from empty caches."""
    sae_memory.clear_cache()
    yield (
        counting(monkeypatch, sae_memory, "estimate_sae"),
        counting(monkeypatch, sae_memory, "trace"),
    )
    sae_memory.clear_cache()


def members(kind: str, base: dict[str, Any], path: str, values: list[Any]) -> list[dict[str, Any]]:
    return [validate_config(kind, {**base, path: v}, 1) for v in values]


def test_a_thousand_learning_rates_are_estimated_once(
    sae_calls: tuple[list[Any], list[Any]],
) -> None:
    calls, traces = sae_calls
    memo = EstimateMemo()
    configs = members("sae", SAE, "lr", [1e-4 * (1 + i) for i in range(1000)])
    found = {estimate_bytes_per_device("sae", c, 1, memo) for c in configs}
    assert len(found) == 1 and len(calls) == 1 and len(traces) == 1
    assert found == {estimate_bytes_per_device("sae", configs[0], 1)}  # as without the memo


def test_members_that_differ_in_what_the_estimate_reads_are_estimated_apart(
    sae_calls: tuple[list[Any], list[Any]],
) -> None:
    calls, traces = sae_calls
    memo = EstimateMemo()
    configs = members("sae", SAE, "k", [2, 4, 8] * 100)
    found = [estimate_bytes_per_device("sae", c, 1, memo) for c in configs]
    assert len(calls) == 3 and len(traces) == 3
    assert len(set(found)) == 3  # k sizes the top-k's tensors
    assert estimate_bytes_per_device("sae", configs[0], 2, memo) != found[0]  # per rank


def test_a_seed_sweep_of_script_jobs_is_estimated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counting(monkeypatch, script_memory, "estimate_memory")
    memo = EstimateMemo()
    args = members("script", SCRIPT, "args", [["--seed", str(i)] for i in range(50)])
    assert {estimate_bytes_per_device("script", c, 2, memo) for c in args} == {2**30}
    assert len(calls) == 1
    sizes = members("script", SCRIPT, "memory_per_device_bytes", [2**30, 2**31])
    assert [estimate_bytes_per_device("script", c, 2, memo) for c in sizes] == [2**30, 2**31]
    assert len(calls) == 2  # the first size was known


def test_a_kind_that_declares_nothing_is_keyed_by_its_whole_config() -> None:
    undeclared = JobKind(name="x", description="", config_model=SaeConfig, train="m:f")
    declared = JobKind(
        name="x", description="", config_model=SaeConfig, train="m:f", estimate_fields=("d_in",)
    )
    a, b = SaeConfig(lr=1e-3).model_dump(mode="json"), SaeConfig(lr=2e-3).model_dump(mode="json")
    assert estimate_view(undeclared, a) != estimate_view(undeclared, b)
    assert estimate_view(declared, a) == estimate_view(declared, b)
    # a declared path another variant of a union lacks reads as absent, not as null
    nested = JobKind(
        name="x", description="", config_model=SaeConfig, train="m:f", estimate_fields=("a.b",)
    )
    assert estimate_view(nested, {"a": {"b": None}}) != estimate_view(nested, {"a": {}})
