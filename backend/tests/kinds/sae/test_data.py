"""Data: the global batch ignores the world size, generation is deterministic, paths stay in."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.torch import save_file

from gpudeck.kinds.sae.config import SyntheticDataset
from gpudeck.kinds.sae.data import (
    DataError,
    DataPosition,
    FileSource,
    GlobalBatchLoader,
    SyntheticSource,
    local_batch_size,
    resolve_dataset_path,
)
from gpudeck.kinds.sae.prefetch import THREAD_NAME, BatchPrefetcher


class Indices:
    """A source whose rows are their own indices: shows exactly which samples a batch holds."""

    def __init__(self, n: int, shuffle: bool = True) -> None:
        self.n, self.shuffle = n, shuffle

    def __len__(self) -> int:
        return self.n

    def rows(self, indices: torch.Tensor) -> torch.Tensor:
        return indices.clone()


def _global_batches(n: int, batch: int, world: int, steps: int) -> list[list[int]]:
    loaders = [
        GlobalBatchLoader(Indices(n), global_batch=batch, rank=r, world_size=world, seed=7)
        for r in range(world)
    ]
    return [torch.cat([ld.next_batch() for ld in loaders]).tolist() for _ in range(steps)]


@settings(max_examples=25, deadline=None)
@given(n=st.integers(8, 300), per_rank=st.integers(1, 8), world=st.sampled_from([2, 3, 4]))
def test_global_batch_is_the_same_for_any_world_size(n: int, per_rank: int, world: int) -> None:
    batch = per_rank * world
    if batch > n:
        return
    steps = 2 * (n // batch) + 1  # crosses epoch boundaries
    assert _global_batches(n, batch, world, steps) == _global_batches(n, batch, 1, steps)


def test_epochs_are_permutations_that_differ() -> None:
    n, batch = 40, 8
    batches = _global_batches(n, batch, 1, 10)  # 5 batches per epoch
    first = [i for b in batches[:5] for i in b]
    second = [i for b in batches[5:] for i in b]
    assert sorted(first) == sorted(second) == list(range(n))
    assert first != second


def test_a_restored_position_continues_the_same_order() -> None:
    straight = GlobalBatchLoader(Indices(50), global_batch=10, rank=0, world_size=1, seed=1)
    batches = [straight.next_batch().tolist() for _ in range(12)]
    resumed = GlobalBatchLoader(
        Indices(50),
        global_batch=10,
        rank=0,
        world_size=1,
        seed=1,
        start=DataPosition(epoch=1, position=20),
    )
    assert [resumed.next_batch().tolist() for _ in range(5)] == batches[7:12]


def test_uneven_batches_are_refused() -> None:
    with pytest.raises(ValueError, match="does not divide"):
        local_batch_size(10, 4)


def test_synthetic_rows_depend_only_on_seed_and_index() -> None:
    spec = SyntheticDataset(num_features=32, active_features=3, num_samples=10_000)
    source = SyntheticSource(spec, d_in=8, seed=5)
    everything = source.rows(torch.arange(0, 1000))
    picked = torch.tensor([999, 3, 512, 256, 255])
    assert torch.equal(source.rows(picked), everything[picked])
    assert torch.equal(SyntheticSource(spec, d_in=8, seed=5).rows(picked), everything[picked])
    assert not torch.equal(SyntheticSource(spec, d_in=8, seed=6).rows(picked), everything[picked])
    assert torch.allclose(source.features.norm(dim=1), torch.ones(32))
    wide = SyntheticSource(spec, d_in=2048, seed=5)  # nearly orthogonal features: countable
    active = (wide.rows(torch.arange(2000)) @ wide.features.T) > 0.4
    assert 2.7 < active.sum(1).float().mean() < 3.3  # active_features=3


def _datasets(tmp_path: Path) -> Path:
    (tmp_path / "datasets" / "sub").mkdir(parents=True)
    return tmp_path / "datasets"


def test_npy_and_safetensors_files_read_the_same_rows(tmp_path: Path) -> None:
    root = _datasets(tmp_path)
    acts = torch.randn(100, 8)
    np.save(root / "a.npy", acts.numpy())
    save_file({"acts": acts, "other": torch.zeros(2)}, root / "sub" / "a.safetensors")
    save_file({"acts": acts.bfloat16()}, root / "b.safetensors")
    idx = torch.tensor([5, 0, 99, 42])
    npy = FileSource(resolve_dataset_path(tmp_path, "a.npy"), None, 8)
    st_file = FileSource(resolve_dataset_path(tmp_path, "sub/a.safetensors"), "acts", 8)
    bf16 = FileSource(resolve_dataset_path(tmp_path, "b.safetensors"), None, 8)
    assert torch.equal(npy.rows(idx), acts[idx]) and torch.equal(st_file.rows(idx), acts[idx])
    assert torch.equal(bf16.rows(idx), acts[idx].bfloat16().float())
    with pytest.raises(DataError, match="expected"):
        FileSource(resolve_dataset_path(tmp_path, "a.npy"), None, 9)
    with pytest.raises(DataError, match="tensor_name"):
        FileSource(resolve_dataset_path(tmp_path, "sub/a.safetensors"), None, 8)


@pytest.mark.parametrize(
    "path", ["../x.npy", "/etc/passwd", "sub/../../x.npy", "missing.npy", "out.npy", "sub"]
)
def test_paths_escaping_the_datasets_dir_are_refused(tmp_path: Path, path: str) -> None:
    root = _datasets(tmp_path)
    outside = tmp_path / "x.npy"
    np.save(outside, np.zeros((4, 8), dtype=np.float32))
    os.symlink(outside, root / "out.npy")
    with pytest.raises(DataError):
        resolve_dataset_path(tmp_path, path)


class FailingAt(Indices):
    """Indices whose read of a batch holding sample `bad` raises."""

    def __init__(self, n: int, bad: int) -> None:
        super().__init__(n, shuffle=False)
        self.bad = bad

    def rows(self, indices: torch.Tensor) -> torch.Tensor:
        if bool((indices == self.bad).any()):
            raise OSError(f"cannot read sample {self.bad}")
        return indices.clone()


def _prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_NAME)]


def test_the_prefetcher_hands_out_the_loaders_batches_and_positions() -> None:
    """Read one batch ahead, it yields the plain loader's batches (across epochs, resumed
    mid-epoch), and its position after each is the plain loader's: what a checkpoint saves."""
    start = DataPosition(epoch=1, position=20)
    plain = GlobalBatchLoader(
        Indices(50), global_batch=10, rank=0, world_size=1, seed=1, start=start
    )
    ahead = GlobalBatchLoader(
        Indices(50), global_batch=10, rank=0, world_size=1, seed=1, start=DataPosition(1, 20)
    )
    with BatchPrefetcher(ahead, batches=12, device=torch.device("cpu")) as batches:
        assert batches.position == start
        for _ in range(12):
            assert batches.next_batch().tolist() == plain.next_batch().tolist()
            assert batches.position == plain.state
        assert ahead.state == plain.state  # no read past the last batch asked for
        with pytest.raises(RuntimeError, match="every batch"):
            batches.next_batch()
    assert not _prefetch_threads()


def test_a_failed_read_surfaces_in_the_step_that_wanted_it() -> None:
    loader = GlobalBatchLoader(FailingAt(40, 25), global_batch=10, rank=0, world_size=1, seed=0)
    batches = BatchPrefetcher(loader, batches=4, device=torch.device("cpu"))
    try:
        assert batches.next_batch().tolist() == list(range(10))
        assert batches.next_batch().tolist() == list(range(10, 20))
        with pytest.raises(OSError, match="cannot read sample 25"):
            batches.next_batch()
        assert batches.position == DataPosition(0, 20)  # the failed batch was not handed out
    finally:
        batches.close()
    assert not _prefetch_threads()
