"""The estimate routes on a bare app (no database: they only compute)."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient

from gpudeck.api.errors import install_error_handlers
from gpudeck.api.routes import estimates

SAE = {"d_in": 256, "d_sae": 2048, "batch_size": 64}


def _client() -> TestClient:
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(estimates.router)
    return TestClient(app)


def test_estimate_returns_the_breakdown() -> None:
    body = _client().post("/api/estimate", json={"kind": "sae", "config": SAE, "world_size": 2})
    assert body.status_code == 200, body.text
    data = body.json()
    assert data["per_rank_batch"] == 32
    assert sum(c["bytes"] for c in data["breakdown"]) == data["bytes_per_device"]
    assert "MemTracker" in data["method"]


def test_the_estimate_says_what_l0_the_architecture_will_give() -> None:
    client = _client()

    def expected(config: dict[str, object]) -> dict[str, dict[str, str]]:
        answer = client.post("/api/estimate", json={"kind": "sae", "config": {**SAE, **config}})
        assert answer.status_code == 200, answer.text
        return {e["label"]: e for e in answer.json()["expectations"]}

    topk = expected({"architecture": "topk", "k": 7})
    assert topk["expected L0"]["value"] == "7"
    assert topk["dictionary"]["value"] == "2,048 latents (8 x d_in)"
    assert "on average" in expected({"architecture": "batchtopk", "k": 3})["expected L0"]["note"]
    jumprelu = expected({"architecture": "jumprelu", "k": 6})
    assert jumprelu["expected L0"]["value"] == "about 6"  # the warm-up's k, held by the penalty
    assert "l0_coefficient" in jumprelu["expected L0"]["note"]
    assert "warning" not in jumprelu
    assert "l1_coefficient" in expected({"architecture": "standard"})["expected L0"]["note"]


def test_the_estimate_warns_of_configs_known_to_train_badly() -> None:
    client = _client()

    def warnings(config: dict[str, object]) -> list[str]:
        answer = client.post("/api/estimate", json={"kind": "sae", "config": {**SAE, **config}})
        assert answer.status_code == 200, answer.text
        return [e["note"] for e in answer.json()["expectations"] if e["warning"]]

    for architecture in ("topk", "batchtopk", "jumprelu", "standard"):
        assert warnings({"architecture": architecture}) == []  # the defaults train well
    dense = warnings({"architecture": "jumprelu", "topk_warm_up_steps": 0, "l0_coefficient": 0.01})
    assert len(dense) == 2
    assert "topk_warm_up_steps" in dense[0] and "trained dense" in dense[0]
    assert "too weak" in dense[1] and "d_in / 64 = 4" in dense[1]
    (dead,) = warnings({"architecture": "batchtopk", "topk_warm_up_steps": 0})
    assert "dead" in dead and "leave topk_warm_up_steps empty" in dead
    (frequency,) = warnings({"architecture": "batchtopk", "dead_min_frequency": 0.0})
    assert "dead_min_frequency" in frequency


def test_the_estimate_warns_when_only_the_final_checkpoint_is_written() -> None:
    """A 400-step run at the default interval (500) writes one checkpoint, at its end: the
    form says so before launch, with the step; a run longer than the interval hears nothing."""
    client = _client()

    def checkpoints(config: dict[str, object]) -> list[dict[str, str]]:
        answer = client.post("/api/estimate", json={"kind": "sae", "config": {**SAE, **config}})
        assert answer.status_code == 200, answer.text
        return [e for e in answer.json()["expectations"] if e["label"] == "checkpoints"]

    (short,) = checkpoints({"steps": 400})
    assert short["warning"] and short["value"] == "the final one only (step 400)"
    assert "every 500 steps" in short["note"] and "checkpoint_interval" in short["note"]
    assert checkpoints({"steps": 1200, "checkpoint_interval": 1200})[0]["value"].endswith("1,200)")
    assert checkpoints({"steps": 501}) == []


def test_bad_config_and_kind_are_422() -> None:
    client = _client()
    bad = client.post("/api/estimate", json={"kind": "sae", "config": {"d_in": 0}})
    assert bad.status_code == 422
    assert client.post("/api/estimate", json={"kind": "nope"}).status_code == 422


def test_max_batch_fits() -> None:
    request = {"kind": "sae", "config": SAE, "world_size": 1,
               "bytes_free_per_device": 3 * 1024**3, "safety_margin_bytes": 0}  # fmt: skip
    data = _client().post("/api/estimate/max-batch", json=request).json()
    assert data["batch_size"] > 0
    assert data["estimate"]["bytes_per_device"] <= 3 * 1024**3
