"""GET /api/choices/{source}: what a form field marked `x-choices` may pick from the data
directory, with what one picks by (issue 25: the activations form took any model and input as
free text)."""

from __future__ import annotations

import json
import os

import numpy as np
from fastapi.testclient import TestClient
from safetensors.numpy import save_file

from gpudeck.core.config import Settings


def test_models_and_datasets_are_listed_with_d_in_and_sizes(
    client: TestClient, settings: Settings
) -> None:
    models = settings.data_dir / "models"
    for name, config in (
        ("tiny-gpt2", {"model_type": "gpt2", "n_embd": 64, "n_layer": 2}),
        ("org/llama-mini", {"model_type": "llama", "hidden_size": 128, "num_hidden_layers": 4}),
    ):
        (models / name).mkdir(parents=True)
        (models / name / "config.json").write_text(json.dumps(config))
        (models / name / "model.safetensors").write_bytes(b"x" * 1000)
    (models / "notes").mkdir()  # no config.json: not a model
    datasets = settings.data_dir / "datasets"
    (datasets / "acts" / "run").mkdir(parents=True)
    np.save(datasets / "ids.npy", np.zeros((5, 16), dtype=np.int64))
    save_file({"activations": np.zeros((10, 8), dtype=np.float32)},
              str(datasets / "acts" / "run" / "activations.safetensors"))  # fmt: skip
    save_file({"x": np.zeros((2, 8), dtype=np.float32)},
              str(datasets / "acts" / "run" / "chunk_000000.safetensors"))  # fmt: skip
    (datasets / "texts.jsonl").write_text('{"text": "hi"}\n')
    (datasets / ".upload-1.npy").write_bytes(b"partial")
    (datasets / "broken.npy").write_bytes(b"not numpy")
    os.symlink("/etc/passwd", datasets / "link.jsonl")

    got = client.get("/api/choices/models")
    assert got.status_code == 200, got.text
    assert [(m["value"], m["d_in"]) for m in got.json()] == [
        ("org/llama-mini", 128),
        ("tiny-gpt2", 64),
    ]
    gpt2 = got.json()[1]
    assert gpt2["size_bytes"] > 1000 and gpt2["detail"] == "gpt2 · 2 layers · hidden size 64"

    listed = {d["value"]: d for d in client.get("/api/choices/datasets").json()}
    assert sorted(listed) == ["acts/run/activations.safetensors", "ids.npy", "texts.jsonl"]
    acts = listed["acts/run/activations.safetensors"]
    assert acts["d_in"] == 8 and "[10, 8] F32" in acts["detail"]
    assert listed["ids.npy"]["d_in"] is None and "[5, 16] int64" in listed["ids.npy"]["detail"]
    assert listed["ids.npy"]["size_bytes"] == os.path.getsize(datasets / "ids.npy")
    assert client.get("/api/choices/checkpoints").status_code == 422


def test_a_kind_marks_the_fields_that_pick_from_the_data_directory(client: TestClient) -> None:
    schema = client.get("/api/kinds/activations").json()["config_schema"]
    assert schema["properties"]["model"]["x-choices"] == "models"
    assert schema["properties"]["input"]["x-choices"] == "datasets"
    assert "x-choices" not in schema["properties"]["output"]  # a new directory: typed
