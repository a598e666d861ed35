"""An activations job naming a model or an input that is not there, or an output that leaves
the data directory, is refused at submit (a 422 naming the field, no job), as the sae and map
kinds refuse theirs: it used to be accepted and fail at start."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from activations_fixtures import tiny_gpt2
from fastapi.testclient import TestClient
from harness import register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.core.config import Settings


def test_missing_model_input_and_escaping_output_are_refused_naming_the_field(
    client: TestClient, db: Session, settings: Settings, tmp_path: Path
) -> None:
    register_devices(db)
    datasets = settings.data_dir / "datasets"
    datasets.mkdir(parents=True, exist_ok=True)
    np.save(datasets / "ids.npy", np.zeros((4, 8), dtype=np.int64))
    model = tiny_gpt2(settings.data_dir / "models").name
    (settings.data_dir / "models" / "notes").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (datasets / "linked").symlink_to(tmp_path / "elsewhere")
    base = {"model": model, "input": "ids.npy", "hook": "transformer.h.0", "output": "acts/a"}
    cases = [
        ({"model": "gpt2-typo"}, "model", "not found"),
        ({"model": model.replace("gpt2", "gtp2")}, "model", f"did you mean {model!r}?"),
        ({"input": "id.npy"}, "input", "did you mean 'ids.npy'?"),
        ({"model": "notes"}, "model", "not a Hugging Face model"),
        ({"input": "nothing.npy"}, "input", "not found"),
        ({"output": "linked/a"}, "output", "escapes"),
    ]
    for change, field, reason in cases:
        body = {"kind": "activations", "config": {**base, **change}, "count": 1}
        answer = client.post("/api/jobs", json=body)
        assert answer.status_code == 422, (change, answer.text)
        detail = answer.json()["detail"][0]
        assert ".".join(map(str, detail["loc"][1:])) == f"config.{field}", (change, detail)
        assert reason in detail["msg"], (change, detail)
    db.rollback()
    assert db.scalar(text("SELECT count(*) FROM jobs")) == 0
    accepted = client.post("/api/jobs", json={"kind": "activations", "config": base, "count": 1})
    assert accepted.status_code == 201, accepted.text
