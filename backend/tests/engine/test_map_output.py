"""Map output: chunks written atomically and never twice, read back in input order, resumable,
consolidated into one file the SAE kind reads; inputs read by position."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file as save_numpy
from safetensors.torch import load_file

from gpudeck.engine.map import output
from gpudeck.engine.map.inputs import ItemsError, open_items, resolve_under


def _write_all(out: Path, order: list[int]) -> torch.Tensor:
    data = torch.arange(40, dtype=torch.float32).reshape(10, 4)
    for index in order:
        assert output.write_chunk(out, index, {"x": data[index * 3 : index * 3 + 3]})
    return data


def test_output_reads_back_in_input_order_whatever_the_write_order(tmp_path: Path) -> None:
    data = _write_all(tmp_path, [3, 1, 0, 2])
    manifest = output.write_manifest(tmp_path, 4, {"model": "m"})
    assert manifest["rows"] == {"x": 10} and manifest["model"] == "m"
    assert torch.equal(output.read_output(tmp_path)["x"], data)
    assert not list(tmp_path.glob(".*tmp"))


def test_a_chunk_is_never_written_twice(tmp_path: Path) -> None:
    output.write_chunk(tmp_path, 0, {"x": torch.zeros(2)})
    assert not output.write_chunk(tmp_path, 0, {"x": torch.ones(2)})
    assert torch.equal(load_file(output.chunk_path(tmp_path, 0))["x"], torch.zeros(2))
    assert output.written_chunks(tmp_path) == {0}


def test_the_manifest_refuses_missing_chunks(tmp_path: Path) -> None:
    _write_all(tmp_path, [0, 2])
    with pytest.raises(output.OutputError, match="1 chunks are missing, first 1"):
        output.write_manifest(tmp_path, 3, {})
    with pytest.raises(output.OutputError, match="no manifest"):
        output.read_output(tmp_path)


def test_a_killed_writer_leaves_no_chunk(tmp_path: Path) -> None:
    (tmp_path / ".chunk_000000.123.tmp").write_bytes(b"half")
    assert output.written_chunks(tmp_path) == set()
    output.remove_partial_writes(tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_consolidate_streams_the_chunks_into_one_file(tmp_path: Path, dtype: torch.dtype) -> None:
    data = torch.randn(10, 4).to(dtype)
    for index in range(4):
        output.write_chunk(tmp_path, index, {"x": data[index * 3 : index * 3 + 3]})
    output.write_manifest(tmp_path, 4, {})
    dest = output.consolidate(tmp_path, "x", tmp_path / "all.safetensors")
    assert torch.equal(load_file(dest)["x"], data)


def test_inputs_are_read_by_position(tmp_path: Path) -> None:
    rows = np.arange(12, dtype=np.int64).reshape(6, 2)
    np.save(tmp_path / "a.npy", rows)
    save_numpy({"ids": rows}, str(tmp_path / "a.safetensors"))
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps({"i": i}) for i in range(5)) + "\n\n")
    (tmp_path / "d").mkdir()
    for name in ("b.txt", "a.txt", ".hidden"):
        (tmp_path / "d" / name).write_text(name)
    for name in ("a.npy", "a.safetensors"):
        items = open_items(tmp_path / name)
        assert len(items) == 6 and np.array_equal(items.get(2, 4), rows[2:4])
    jsonl = open_items(tmp_path / "a.jsonl")
    assert len(jsonl) == 5 and jsonl.get(3, 9) == [{"i": 3}, {"i": 4}]
    files = open_items(tmp_path / "d")
    assert [p.name for p in files.get(0, 5)] == ["a.txt", "b.txt"]
    with pytest.raises(ItemsError, match="without '\\.\\.'"):
        resolve_under(tmp_path / "d", "../a.npy")
    (tmp_path / "d" / "out").symlink_to(tmp_path / "a.npy")
    with pytest.raises(ItemsError, match="escapes"):
        resolve_under(tmp_path / "d", "out")


def test_an_output_of_another_job_is_refused(tmp_path: Path) -> None:
    job = {"model": "m", "num_items": 10, "chunk_size": 4}
    output.check_job(tmp_path, job, write=False)
    assert not (tmp_path / output.JOB_FILE).exists()  # only rank 0 records it
    output.check_job(tmp_path, job, write=True)
    output.check_job(tmp_path, dict(job), write=False)  # the same job resumed: accepted
    with pytest.raises(output.OutputError, match="differs in chunk_size, model"):
        output.check_job(tmp_path, {**job, "chunk_size": 5, "model": "n"}, write=True)
