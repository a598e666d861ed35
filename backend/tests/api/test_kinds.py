"""GET /api/kinds: every registered kind, with what a form needs, including kinds whose config
has required fields (the activations kind needs a model path)."""

from __future__ import annotations

from fastapi.testclient import TestClient


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
