"""The map engine's chunk writer: writes overlap the next chunk's computation, a chunk is
reported only once its file is complete, and a failed write fails the run."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from gpudeck.engine.map import output, writer
from gpudeck.engine.map.writer import ChunkWriter


def test_the_next_chunk_is_computed_while_the_last_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release, writing = threading.Event(), threading.Event()
    real_write = output.write_chunk

    def slow_write(out_dir: Path, index: int, tensors: dict[str, torch.Tensor]) -> bool:
        writing.set()
        assert release.wait(10), "the test never let the write finish"
        return real_write(out_dir, index, tensors)

    monkeypatch.setattr(writer, "write_chunk", slow_write)
    with ChunkWriter(tmp_path) as chunks:
        assert chunks.write(0, {"rows": torch.ones(4, 2)}) == []
        assert writing.wait(10)
        # Chunk 1 is "computed" here while chunk 0's write is held: not reported, no file yet.
        assert not output.chunk_path(tmp_path, 0).exists()
        release.set()
        assert chunks.write(1, {"rows": torch.zeros(4, 2)}) == [(0, True)]
        assert output.chunk_path(tmp_path, 0).exists()
        assert chunks.finish() == [(1, True)]
    assert output.written_chunks(tmp_path) == {0, 1}


def test_a_chunk_that_exists_is_reported_not_written(tmp_path: Path) -> None:
    assert output.write_chunk(tmp_path, 3, {"rows": torch.ones(2, 2)})
    with ChunkWriter(tmp_path) as chunks:
        chunks.write(3, {"rows": torch.zeros(2, 2)})
        assert chunks.finish() == [(3, False)]
    kept = load_file(str(output.chunk_path(tmp_path, 3)))["rows"]
    assert torch.equal(kept, torch.ones(2, 2))  # never overwritten


def test_a_failed_write_fails_at_the_next_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(out_dir: Path, index: int, tensors: dict[str, torch.Tensor]) -> bool:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer, "write_chunk", broken)
    with ChunkWriter(tmp_path) as chunks:
        chunks.write(0, {"rows": torch.ones(1)})
        with pytest.raises(OSError, match="No space left"):
            chunks.write(1, {"rows": torch.ones(1)})
