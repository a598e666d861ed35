"""`gpudeck kinds`: the real command against a real API lists each kind with the kind API version
it is written for; a kind the server refused for its version is listed as unavailable with the
reason, and `gpudeck submit` of it is refused naming `kind` and why."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from cli_harness import Cli

from gpudeck.engine import kinds
from gpudeck.engine.kind_api import KIND_API_VERSION


@pytest.fixture
def refused(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cli]:
    """The live API's registry (in this process) with two kinds it refuses beside e2e_kinds."""
    modules = "e2e_kinds,kind_versions.too_new,kind_versions.too_old"
    monkeypatch.setenv(kinds.KIND_MODULES_ENV, modules)
    kinds.registry.cache_clear()
    yield cli
    kinds.registry.cache_clear()


def _rows(stdout: str) -> dict[str, str]:
    """Each table row's line, by the kind's name (its first cell)."""
    cells = (line.strip("│ ").split("│") for line in stdout.splitlines() if "│" in line)
    return {row[0].strip(): "│".join(row) for row in cells if row[0].strip()}


def test_kinds_lists_versions_and_a_refused_kind_as_unavailable_with_why(refused: Cli) -> None:
    listed = refused("kinds")
    assert listed.returncode == 0, listed.stderr
    rows = _rows(listed.stdout)
    assert f"│ {KIND_API_VERSION} " in rows["sae"] and "│ available " in rows["sae"]
    assert f"│ {KIND_API_VERSION + 1} " in rows["from_the_future"]
    lines = listed.stdout.splitlines()
    for name, refused_kind in kinds.refused_kinds().items():
        assert "│ unavailable " in rows[name]
        assert f"{name} is unavailable: {refused_kind.reason}" in lines  # whole, on its line

    as_json = {k["name"]: k for k in json.loads(refused("kinds", "--json").stdout)}
    assert as_json["from_the_future"]["available"] is False
    assert as_json["from_the_future"]["api_version"] == KIND_API_VERSION + 1


def test_submit_of_a_refused_kind_is_refused_naming_the_kind_and_why(refused: Cli) -> None:
    submitted = refused("submit", "from_the_past", "--config", "{}", "--count", "1")
    assert submitted.returncode == 1
    reason = kinds.refused_kinds()["from_the_past"].reason
    assert f"422 kind: 'from_the_past' is unavailable: {reason}" in submitted.stderr
