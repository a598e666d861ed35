"""GET /api/kinds: every registered kind, with what a form needs, including kinds whose config
has required fields (the activations kind needs a model path), and the kinds the server refused
for their kind API version, unavailable, with the reason (they cannot be submitted)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from harness import register_devices
from sqlalchemy.orm import Session

from gpudeck.engine import kinds
from gpudeck.engine.kind_api import KIND_API_VERSION


def test_every_built_in_kind_is_listed_with_its_schema_and_defaults(client: TestClient) -> None:
    response = client.get("/api/kinds")
    assert response.status_code == 200
    kinds = {k["name"]: k for k in response.json()}
    assert {"sae", "activations"} <= set(kinds)
    activations = kinds["activations"]
    assert "model" in activations["config_schema"]["required"]
    assert "model" not in activations["defaults"]  # required: the user names it
    assert activations["defaults"]["context_length"] == 128
    assert kinds["sae"]["estimates_memory"] and kinds["sae"]["charts"]


def test_an_unknown_kind_is_a_404_naming_the_known_ones(client: TestClient) -> None:
    response = client.get("/api/kinds/nope")
    assert response.status_code == 404
    assert "sae" in response.json()["detail"]["message"]


@pytest.fixture
def refused(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Two kinds this GPUDeck refuses (tests/kind_versions): one newer, one older."""
    monkeypatch.setenv(kinds.KIND_MODULES_ENV, "kind_versions.too_new,kind_versions.too_old")
    kinds.registry.cache_clear()
    yield
    kinds.registry.cache_clear()


def test_every_kind_says_its_api_version_and_a_refused_one_is_listed_unavailable_with_why(
    refused: None, client: TestClient
) -> None:
    listed = {k["name"]: k for k in client.get("/api/kinds").json()}
    assert listed["sae"]["api_version"] == KIND_API_VERSION and listed["sae"]["available"]
    assert listed["sae"]["unavailable_reason"] is None
    newer = listed["from_the_future"]
    assert (newer["available"], newer["api_version"]) == (False, KIND_API_VERSION + 1)
    assert newer["unavailable_reason"] == kinds.refused_kinds()["from_the_future"].reason
    assert "newer than this GPUDeck's" in newer["unavailable_reason"]
    older = listed["from_the_past"]
    assert not older["available"] and "what changed since" in older["unavailable_reason"]
    assert client.get("/api/kinds/from_the_past").json() == older  # its old jobs still chart


@pytest.mark.parametrize("name", ["from_the_future", "from_the_past"])
def test_a_refused_kind_is_not_offered_for_submit_or_estimate(
    refused: None, client: TestClient, db: Session, name: str
) -> None:
    register_devices(db)  # devices free: the kind is what the submit is refused for
    reason = kinds.refused_kinds()[name].reason
    for path, body in [
        ("/api/jobs", {"kind": name, "config": {}, "count": 1}),
        ("/api/estimate", {"kind": name, "config": {}, "world_size": 1}),
    ]:
        response = client.post(path, json=body)
        assert response.status_code == 422, response.text
        [error] = response.json()["detail"]
        assert error["loc"][-1] == "kind"
        assert error["msg"] == f"{name!r} is unavailable: {reason}"
