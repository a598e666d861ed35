"""The kind API's version at registration: a kind written for a version this GPUDeck does not run
(older than the previous one, or newer than the current) is refused when the registry loads,
with a reason naming the kind, its version and what changed; a kind that declares no version
is taken as written for version 1, which still runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudeck.engine import kinds
from gpudeck.engine.kind_api import (
    CHANGES,
    KIND_API_VERSION,
    SUPPORTED_KIND_API_VERSIONS,
    refusal,
)

OLD_PACKAGE = Path(__file__).resolve().parents[1] / "kind_versions" / "gpudeck-kind-oldreg"


@pytest.fixture
def versioned(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(OLD_PACKAGE))
    modules = "kind_versions.too_new,kind_versions.too_old,gpudeck_kind_oldreg"
    monkeypatch.setenv(kinds.KIND_MODULES_ENV, modules)
    kinds.registry.cache_clear()
    yield
    kinds.registry.cache_clear()


def test_the_engine_runs_its_version_and_the_one_before() -> None:
    assert SUPPORTED_KIND_API_VERSIONS == (KIND_API_VERSION - 1, KIND_API_VERSION)
    assert all(refusal("k", v) is None for v in SUPPORTED_KIND_API_VERSIONS)
    assert KIND_API_VERSION in CHANGES  # the change that made this version is written down


def test_a_kind_too_new_or_too_old_is_refused_at_registration_with_what_changed(
    versioned: None,
) -> None:
    offered, refused = kinds.registry(), kinds.refused_kinds()
    assert {"from_the_future", "from_the_past"}.isdisjoint(offered)
    assert kinds.get_kind("from_the_future") is None
    assert set(refused) == {"from_the_future", "from_the_past"}

    newer = refused["from_the_future"].reason
    assert "'from_the_future'" in newer
    assert f"version {KIND_API_VERSION + 1}, newer than this GPUDeck's {KIND_API_VERSION}" in newer

    older = refused["from_the_past"].reason
    first = SUPPORTED_KIND_API_VERSIONS[0]
    assert f"'from_the_past' is written for kind API version {first - 1}" in older
    assert f"runs kind API versions {first} to {KIND_API_VERSION}" in older
    assert CHANGES[KIND_API_VERSION] in older  # what changed: the old call and the new one
    assert "save_checkpoint(step, *, tensor_files, json_files)" in older


def test_a_kind_that_declares_no_version_is_taken_as_version_1_and_runs(versioned: None) -> None:
    undeclared = kinds.get_kind("oldreg")  # written before versions: it says none
    assert undeclared is not None and undeclared.api_version == 1
    assert "oldreg" not in kinds.refused_kinds()


def test_built_in_kinds_are_written_for_the_current_version() -> None:
    built_in = {"sae", "activations", "script", "map", "sae_eval"}
    assert {kinds.registry()[name].api_version for name in built_in} == {KIND_API_VERSION}


@pytest.mark.parametrize("version", [True, "2", 2.0, None])
def test_a_version_that_is_not_a_whole_number_is_refused_by_name(version: object) -> None:
    reason = refusal("odd", version)
    assert reason == f"kind 'odd': api_version must be a whole number, not {version!r}"
