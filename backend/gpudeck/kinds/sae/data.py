"""Training data: seeded synthetic superposition data, or activation files under the data dir.

Batching keeps one invariant: the global batch at step s is the same set of samples whatever
the world size. Each epoch has one global index order; global batch s is
`order[s*B:(s+1)*B]` and rank r takes the r-th contiguous slice of it. The epoch permutation
comes from `DistributedSampler` in single-replica mode; its own rank sharding (`r::world`)
is not used, because with per-rank batches taken consecutively from each shard, the union of
a step's rank batches would depend on the world size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from torch.utils.data import Dataset, DistributedSampler

from gpudeck.engine.kinds import InputError
from gpudeck.engine.map.inputs import ItemsError, resolve_under
from gpudeck.engine.safetensors_header import read_header
from gpudeck.kinds.sae.config import FileDataset, SaeConfig, SyntheticDataset

SYNTHETIC_BLOCK = 256  # samples generated together from one seeded generator
MAGNITUDE_RANGE = (0.5, 1.5)  # of an active synthetic feature, uniform
_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "BF16": np.uint16}


class DataError(ValueError):
    """A dataset that cannot be used: missing, escaping the datasets dir, or the wrong shape."""


class RowSource(Protocol):
    """Rows addressable by global sample index."""

    shuffle: bool

    def __len__(self) -> int: ...

    def rows(self, indices: torch.Tensor) -> torch.Tensor: ...


def _mix(*values: int) -> int:
    """splitmix64 over the values: decorrelated seeds from (seed, block) pairs."""
    state = 0x9E3779B97F4A7C15
    for value in values:
        state = (state ^ (value & 0xFFFFFFFFFFFFFFFF)) * 0xBF58476D1CE4E5B9 & 0xFFFFFFFFFFFFFFFF
        state = (state ^ (state >> 31)) * 0x94D049BB133111EB & 0xFFFFFFFFFFFFFFFF
        state ^= state >> 29
    return state & 0x7FFFFFFFFFFFFFFF


class SyntheticSource:
    """Sparse superposition: x = sum over active true features of magnitude * direction.

    Each true feature is active in a sample with probability active_features / num_features,
    with a magnitude uniform in MAGNITUDE_RANGE, bounded away from zero so that the L1
    shrinkage of a ReLU SAE does not swallow most of the signal. Sample i depends only on
    (seed, i): rows come from fixed blocks of SYNTHETIC_BLOCK samples, each drawn from its own
    seeded generator. The samples are i.i.d. by construction, so the epoch order is the
    identity (no shuffle).
    """

    shuffle = False

    def __init__(self, spec: SyntheticDataset, d_in: int, seed: int) -> None:
        self.num_samples = spec.num_samples
        self.seed = seed
        self.p_active = min(1.0, spec.active_features / spec.num_features)
        gen = torch.Generator().manual_seed(_mix(seed, 1 << 62))
        directions = torch.randn(spec.num_features, d_in, generator=gen)
        self.features = directions / directions.norm(dim=1, keepdim=True)

    def __len__(self) -> int:
        return self.num_samples

    def _block(self, block: int) -> torch.Tensor:
        gen = torch.Generator().manual_seed(_mix(self.seed, block))
        num_features = self.features.shape[0]
        active = torch.rand(SYNTHETIC_BLOCK, num_features, generator=gen) < self.p_active
        low, high = MAGNITUDE_RANGE
        magnitudes = low + (high - low) * torch.rand(SYNTHETIC_BLOCK, num_features, generator=gen)
        return (active * magnitudes) @ self.features

    def rows(self, indices: torch.Tensor) -> torch.Tensor:
        blocks = torch.div(indices, SYNTHETIC_BLOCK, rounding_mode="floor")
        out = torch.empty(len(indices), self.features.shape[1])
        for block in torch.unique(blocks).tolist():
            mask = blocks == block
            out[mask] = self._block(block)[indices[mask] % SYNTHETIC_BLOCK]
        return out


def resolve_dataset_path(data_dir: str | Path, relative: str) -> Path:
    """The file `relative` under <data_dir>/datasets; refuses anything that escapes it."""
    try:
        path = resolve_under(Path(data_dir) / "datasets", relative)
    except ItemsError as exc:
        raise DataError(f"dataset {exc}") from exc
    if not path.is_file():
        raise DataError(f"dataset {relative!r} is not a file")
    return path


def _safetensors_memmap(path: Path, tensor_name: str | None) -> tuple[np.ndarray, bool]:
    """Memory-map one tensor of a .safetensors file (8-byte header size, JSON header, data)."""
    header, data_start = read_header(path)
    names = [name for name in header if name != "__metadata__"]
    if tensor_name is None:
        if len(names) != 1:
            raise DataError(f"{path.name} holds {len(names)} tensors: set tensor_name")
        tensor_name = names[0]
    if tensor_name not in header:
        raise DataError(f"{path.name} has no tensor {tensor_name!r}")
    info = header[tensor_name]
    if info["dtype"] not in _SAFETENSORS_DTYPES:
        raise DataError(f"unsupported dtype {info['dtype']} in {path.name}")
    start, _ = info["data_offsets"]
    dtype = _SAFETENSORS_DTYPES[info["dtype"]]
    arr = np.memmap(
        path, dtype=dtype, mode="r", offset=data_start + start, shape=tuple(info["shape"])
    )
    return arr, info["dtype"] == "BF16"


class FileSource:
    """Rows of a [N, d_in] activation matrix, memory-mapped so ranks share the page cache."""

    shuffle = True

    def __init__(self, path: Path, tensor_name: str | None, d_in: int) -> None:
        self.bf16 = False  # numpy has no bfloat16: such files are mapped as uint16 bits
        if path.suffix == ".npy":
            self.array = np.load(path, mmap_mode="r")
        else:
            self.array, self.bf16 = _safetensors_memmap(path, tensor_name)
        if self.array.ndim != 2 or self.array.shape[1] != d_in:
            raise DataError(f"{path.name} has shape {self.array.shape}, expected [N, {d_in}]")

    def __len__(self) -> int:
        return int(self.array.shape[0])

    def rows(self, indices: torch.Tensor) -> torch.Tensor:
        chunk = np.ascontiguousarray(self.array[indices.numpy()])
        if self.bf16:
            return torch.from_numpy(chunk.view(np.int16)).view(torch.bfloat16).float()
        return torch.from_numpy(chunk).float()


def open_source(config: SaeConfig, data_dir: str | Path) -> RowSource:
    spec = config.dataset
    if isinstance(spec, SyntheticDataset):
        return SyntheticSource(spec, config.d_in, config.seed)
    assert isinstance(spec, FileDataset)
    return FileSource(resolve_dataset_path(data_dir, spec.path), spec.tensor_name, config.d_in)


STATS_SAMPLES = 8192  # rows read to set the activation scale and the initial b_dec


@dataclass(frozen=True)
class ActivationStats:
    scale: float  # inputs are multiplied by this during training (1.0: no normalisation)
    mean: torch.Tensor  # of the scaled rows: b_dec's initial value with b_dec_init "mean"


def activation_stats(source: RowSource, config: SaeConfig) -> ActivationStats:
    """The normalising scale and the data mean, from the first STATS_SAMPLES rows.

    Every rank reads the same rows, so every rank gets the same numbers, with no collective.
    The scale brings the mean row norm to about sqrt(d_in) (SAELens's expected_average_only_in)
    and is rounded to a power of 2, so folding it into the saved weights (and out again on
    resume) is exact in floating point.
    """
    rows = source.rows(torch.arange(min(len(source), STATS_SAMPLES))).double()
    # A non-finite row must fail the step that trains on it, by name (NonFiniteLoss), not
    # poison the scale and b_dec of every step.
    rows = rows[torch.isfinite(rows).all(dim=1)]
    if len(rows) == 0:
        return ActivationStats(scale=1.0, mean=torch.zeros(config.d_in))
    scale = 1.0
    mean_norm = float(rows.norm(dim=1).mean())
    if config.normalize_activations == "expected_average_only_in" and mean_norm > 0:
        scale = 2.0 ** round(math.log2(math.sqrt(config.d_in) / mean_norm))
    return ActivationStats(scale=scale, mean=(rows.mean(dim=0) * scale).float())


def check_inputs(config: SaeConfig, data_dir: str | Path) -> None:
    """At submit: a file dataset must exist under the datasets dir, hold the named tensor and
    have d_in columns, so the job is refused now rather than failing when it starts."""
    spec = config.dataset
    if not isinstance(spec, FileDataset):
        return
    try:
        path = resolve_dataset_path(data_dir, spec.path)
    except DataError as exc:
        raise InputError("dataset.path", str(exc)) from None
    try:
        FileSource(path, spec.tensor_name, config.d_in)
    except DataError as exc:
        field = "dataset.tensor_name" if spec.tensor_name else "dataset.path"
        raise InputError(field, str(exc)) from None
    except (OSError, ValueError, KeyError) as exc:  # not a readable .npy/.safetensors file
        raise InputError("dataset.path", f"{spec.path} cannot be read: {exc}") from None


def local_batch_size(global_batch: int, world_size: int) -> int:
    if global_batch % world_size:
        raise ValueError(f"batch_size {global_batch} does not divide across {world_size} ranks")
    return global_batch // world_size


@dataclass
class DataPosition:
    """Where the next global batch starts: saved in trainer state so resume continues exactly."""

    epoch: int = 0
    position: int = 0  # index into the epoch's global order


class GlobalBatchLoader:
    """Yields this rank's slice of each global batch; see the module docstring."""

    def __init__(
        self,
        source: RowSource,
        *,
        global_batch: int,
        rank: int,
        world_size: int,
        seed: int,
        start: DataPosition | None = None,
    ) -> None:
        if len(source) < global_batch:
            raise DataError(f"dataset has {len(source)} samples, fewer than one batch")
        self.source = source
        self.global_batch = global_batch
        self.local_batch = local_batch_size(global_batch, world_size)
        self.rank = rank
        self.state = start or DataPosition()
        self._sampler: DistributedSampler[int] = DistributedSampler(
            _Sized(len(source)), num_replicas=1, rank=0, shuffle=source.shuffle, seed=seed
        )
        self._order = self._epoch_order(self.state.epoch)

    def _epoch_order(self, epoch: int) -> torch.Tensor:
        if not self.source.shuffle:
            return torch.arange(len(self.source))
        self._sampler.set_epoch(epoch)
        return torch.tensor(list(iter(self._sampler)), dtype=torch.int64)

    def next_indices(self) -> torch.Tensor:
        """This rank's sample indices of the next global batch; moves the position past it."""
        if self.state.position + self.global_batch > len(self.source):
            self.state = DataPosition(epoch=self.state.epoch + 1, position=0)
            self._order = self._epoch_order(self.state.epoch)
        start = self.state.position + self.rank * self.local_batch
        indices = self._order[start : start + self.local_batch]
        self.state.position += self.global_batch
        return indices

    def next_batch(self) -> torch.Tensor:
        return self.source.rows(self.next_indices())


class _Sized(Dataset[int]):
    """All DistributedSampler needs of a dataset is its length."""

    def __init__(self, length: int) -> None:
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        return index
