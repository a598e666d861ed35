"""The next batch's rows, read on a background thread while the current step runs.

A small SAE's step is host-bound: on an H200 a member of a shared GPU took ~25 ms a step for
~1-2 ms of GPU work, most of it the gather of the batch's random rows from the memory-mapped
file (FileSource.rows) and the copy to the device (issue 37). One thread, depth 1: while step s
runs, the rows of batch s + 1 are gathered (and pinned on CUDA, so the copy to the device is
asynchronous). numpy's gather and torch's kernels release the GIL, so the two overlap.

The loader's position moves when a batch is requested, one batch ahead of the trainer;
`position` is the one after the last batch handed out, which is what a checkpoint saves, so a
resumed run sees the batches an uninterrupted one sees. An exception in the read is raised by
`next_batch`, in the step that wanted the rows. `close` (also on leaving a `with` block) drops
the batch in flight and ends the thread.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType

import torch

from gpudeck.kinds.sae.data import DataPosition, GlobalBatchLoader

THREAD_NAME = "gpudeck-prefetch-"  # + rank; tests/conftest.py fails a test that leaves one


class BatchPrefetcher:
    """`batches` batches of `loader`, on `device`, each read while the one before is used."""

    def __init__(self, loader: GlobalBatchLoader, *, batches: int, device: torch.device) -> None:
        self.loader = loader
        self.position = dataclasses.replace(loader.state)  # after the last batch handed out
        self._device = device
        self._left = batches
        self._pool = ThreadPoolExecutor(
            1,
            thread_name_prefix=f"{THREAD_NAME}{loader.rank}",
            initializer=_init_thread,
            initargs=(torch.get_num_threads(), device),
        )
        self._pending: tuple[Future[torch.Tensor], DataPosition] | None = None
        self._request()

    def _request(self) -> None:
        if self._left <= 0:
            self._pending = None
            return
        self._left -= 1
        indices = self.loader.next_indices()  # on this thread: the loader's state is ours
        self._pending = (
            self._pool.submit(self._read, indices),
            dataclasses.replace(self.loader.state),
        )

    def _read(self, indices: torch.Tensor) -> torch.Tensor:
        rows = self.loader.source.rows(indices)
        return rows.pin_memory() if self._device.type == "cuda" else rows

    def next_batch(self) -> torch.Tensor:
        """The next batch on the device (the copy may still run: it is ordered before the
        step's kernels on the current stream)."""
        if self._pending is None:
            raise RuntimeError("the prefetcher has handed out every batch it was asked for")
        future, after = self._pending
        rows = future.result()  # the read's exception surfaces here
        self.position = after
        self._request()
        return rows.to(self._device, non_blocking=True)

    def close(self) -> None:
        """End the thread (after the read in progress, if one is); idempotent."""
        self._pending = None
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> BatchPrefetcher:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _init_thread(num_threads: int, device: torch.device) -> None:
    # A new thread starts with OpenMP's default thread count, not the rank's (engine/rank.py
    # sets it on the main thread); pinning needs the rank's device current, as DataLoader's
    # pin thread sets it.
    torch.set_num_threads(num_threads)
    if device.type == "cuda":
        torch.cuda.set_device(device)
