"""Chunk writes on a thread of their own, overlapping the computation of the next chunk.

Writing a chunk (safetensors, then fsync) took 0.73 s of a 5 s map on an H200, all of it while
the GPU sat idle (docs/benchmarks-gpu.md, section 6). Here the rank copies a chunk to host
memory (the device's last work for it), hands it over and computes the next one while it is
written. At most one write is in flight, so at most two chunks are in host memory at a time;
a chunk counts as done (and is reported) only once its write has finished.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType

import torch

from gpudeck.engine.map.output import write_chunk

Written = tuple[int, bool]  # (chunk index, False if it existed already)


class ChunkWriter:
    def __init__(self, out_dir: Path) -> None:
        self._out_dir = out_dir
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="chunk-writer")
        self._pending: tuple[int, Future[bool]] | None = None

    def write(self, index: int, tensors: Mapping[str, torch.Tensor]) -> list[Written]:
        """Start writing chunk `index`; the chunks whose writes finished meanwhile."""
        host = {name: t.detach().cpu().contiguous() for name, t in tensors.items()}
        finished = self._wait()
        self._pending = (index, self._pool.submit(write_chunk, self._out_dir, index, host))
        return finished

    def finish(self) -> list[Written]:
        """Wait for the last write; a write that failed raises here."""
        return self._wait()

    def _wait(self) -> list[Written]:
        if self._pending is None:
            return []
        (index, future), self._pending = self._pending, None
        return [(index, future.result())]

    def __enter__(self) -> ChunkWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._pool.shutdown(wait=True)  # never leave a half-written chunk's thread behind
