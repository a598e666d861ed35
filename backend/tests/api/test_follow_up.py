"""GET /api/jobs/{id}/follow-up: a kind that offers none is a 404, a source that ended without
output a 409 (unless its follow-up reads its checkpoints); an extraction's SAE gets d_in from
the model until cfg.json says it."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient
from harness import register_devices
from sqlalchemy.orm import Session

from gpudeck.core.config import Settings

EXTRACTION = {"model": "m", "input": "ids.npy", "hook": "transformer.h.0", "output": "acts/x"}


def _job(client: TestClient, kind: str, config: dict[str, Any]) -> int:
    body = {"kind": kind, "config": config, "count": 1, "hold": True}
    created = client.post("/api/jobs", json=body)
    assert created.status_code == 201, created.text
    return int(created.json()["id"])


def test_follow_ups_by_kind_and_state(client: TestClient, db: Session, settings: Settings) -> None:
    register_devices(db)
    (settings.data_dir / "models" / "m").mkdir(parents=True)
    (settings.data_dir / "models" / "m" / "config.json").write_text(json.dumps({"n_embd": 48}))
    (settings.data_dir / "datasets").mkdir(parents=True, exist_ok=True)
    (settings.data_dir / "datasets" / "ids.npy").write_bytes(b"")  # checked at submit
    sae = _job(client, "sae", {})
    evaluate = client.get(f"/api/jobs/{sae}/follow-up").json()  # its checkpoints, as they come
    assert (evaluate["kind"], evaluate["depends_on"]) == ("sae_eval", [])
    assert evaluate["config"] == {"source_job": sae, "dataset": {"type": "heldout"}}
    assert (evaluate["name"], evaluate["checkpoint_field"]) == (f"eval of job {sae}", "step")
    assert client.post(f"/api/jobs/{sae}/cancel").status_code == 200
    assert client.get(f"/api/jobs/{sae}/follow-up").status_code == 200  # cancelled: still

    extraction = _job(client, "activations", EXTRACTION)
    follow = client.get(f"/api/jobs/{extraction}/follow-up").json()
    assert follow["config"]["d_in"] == 48 and follow["depends_on"] == [extraction]
    assert "hidden size" in follow["note"]
    out = settings.data_dir / "datasets" / "acts" / "x"
    out.mkdir(parents=True)
    dataset = {"type": "file", "path": "acts/x/activations.safetensors"}
    (out / "cfg.json").write_text(json.dumps({"d_in": 96, "sae_dataset": dataset}))
    assert client.get(f"/api/jobs/{extraction}/follow-up").json()["config"]["d_in"] == 96

    assert client.post(f"/api/jobs/{extraction}/cancel").status_code == 200
    ended = client.get(f"/api/jobs/{extraction}/follow-up")
    assert ended.status_code == 409 and ended.json()["detail"]["code"] == "no_output"
    kinds = {k["name"]: k for k in client.get("/api/kinds").json()}
    assert kinds["activations"]["offers_follow_up"] and kinds["sae"]["offers_follow_up"]
    assert not kinds["sae_eval"]["offers_follow_up"]
    assert kinds["activations"]["resumes_from"] == "output"
