"""What a form field may pick from the data directory: models found by their config.json at
most MAX_DEPTH folders down (a model's own subfolders are not models, hidden folders and links
are skipped), data files with the tensors they hold, and at most MAX_ITEMS of either."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from gpudeck.services.data import choices
from gpudeck.services.errors import InvalidInput


def model(root: Path, name: str, config: dict[str, object] | str) -> Path:
    directory = root / "models" / name
    directory.mkdir(parents=True)
    text = config if isinstance(config, str) else json.dumps(config)
    (directory / "config.json").write_text(text)
    return directory


def test_an_unknown_source_is_refused_and_a_missing_directory_is_empty(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as info:
        choices.list_choices(tmp_path, "checkpoints")
    assert info.value.field == "source"
    assert choices.list_choices(tmp_path, "models") == []


def test_models_are_found_down_to_the_depth_limit_and_not_inside_one_another(
    tmp_path: Path,
) -> None:
    gpt2 = model(tmp_path, "gpt2", {"model_type": "gpt2", "n_embd": 64, "n_layer": 2})
    (gpt2 / "weights.bin").write_bytes(b"x" * 100)
    model(tmp_path, "gpt2/draft", {"n_embd": 32})  # a model's own subfolder
    deepest = "/".join(f"d{i}" for i in range(choices.MAX_DEPTH))
    model(tmp_path, deepest, {"hidden_size": 16})
    model(tmp_path, deepest + "/too-deep", {"hidden_size": 8})
    model(tmp_path, ".cache/hidden", {"hidden_size": 8})
    model(tmp_path, "broken", "{not json")
    model(tmp_path, "bare", {})
    os.symlink(gpt2, tmp_path / "models" / "link")

    found = {c.value: c for c in choices.list_choices(tmp_path, "models")}
    assert sorted(found) == ["bare", deepest, "gpt2"]
    assert (found[deepest].d_in, found["bare"].d_in, found["bare"].detail) == (16, None, "model")
    assert found["gpt2"].detail == "gpt2 · 2 layers · hidden size 64"
    assert found["gpt2"].size_bytes == 100 + len((gpt2 / "config.json").read_bytes()) + len(
        (gpt2 / "draft" / "config.json").read_bytes()
    )  # everything under it is its own


def test_a_data_file_shows_its_first_three_tensors_and_how_many_more(tmp_path: Path) -> None:
    root = tmp_path / "datasets"
    root.mkdir()
    save_file(
        {f"t{i}": np.zeros((2, 3), np.float32) for i in range(5)}, str(root / "five.safetensors")
    )
    np.save(root / "ids.npy", np.zeros((4, 6), np.int32))
    [five, ids] = choices.list_choices(tmp_path, "datasets")
    assert five.detail == "t0 [2, 3] F32, t1 [2, 3] F32, t2 [2, 3] F32 and 2 more"
    assert five.d_in == 3
    assert (ids.value, ids.d_in, ids.detail) == ("ids.npy", None, "[4, 6] int32")  # no floats


def test_no_more_than_max_items_are_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(choices, "MAX_ITEMS", 3)
    root = tmp_path / "datasets"
    root.mkdir()
    for i in range(5):
        (root / f"texts{i}.jsonl").write_text("{}\n")
    for i in range(5):
        model(tmp_path, f"m{i}", {"hidden_size": 8})
    assert [c.value for c in choices.list_choices(tmp_path, "datasets")] == [
        "texts0.jsonl",
        "texts1.jsonl",
        "texts2.jsonl",
    ]
    assert len(choices.list_choices(tmp_path, "models")) == 3
