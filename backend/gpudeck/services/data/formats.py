"""Header checks for uploaded activation files: safetensors or .npy, each tensor [N, d_in].

Only headers are read and parsed; nothing is unpickled or evaluated (numpy's header reader uses
a literal parser, and object arrays, which would need pickle, are refused)."""

from __future__ import annotations

import dataclasses
import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
from numpy.lib import format as npy_format

from gpudeck.services.errors import InvalidInput

MAX_SAFETENSORS_HEADER_BYTES = 100 * 1024 * 1024  # the limit the safetensors library sets
_SAFETENSORS_DTYPES = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
}  # fmt: skip


@dataclass(frozen=True)
class Tensor:
    name: str | None
    dtype: str
    shape: tuple[int, ...]
    data_start: int = 0  # where its data begins in the file, in bytes


def invalid(reason: str) -> InvalidInput:
    return InvalidInput([("body", reason)])


def check_matrix(shape: tuple[int, ...], what: str) -> None:
    if len(shape) != 2 or shape[0] < 1 or shape[1] < 1:
        raise invalid(f"{what} has shape {list(shape)}; expected [N, d_in] with N, d_in >= 1")


def read_safetensors(f: BinaryIO, size: int) -> list[Tensor]:
    raw = f.read(8)
    if len(raw) < 8:
        raise invalid("not a safetensors file: shorter than its 8-byte header length")
    (header_len,) = struct.unpack("<Q", raw)
    if not 2 <= header_len <= min(MAX_SAFETENSORS_HEADER_BYTES, size - 8):
        raise invalid("not a safetensors file: bad header length")
    try:
        header = json.loads(f.read(header_len))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise invalid("not a safetensors file: the header is not JSON") from None
    if not isinstance(header, dict):
        raise invalid("not a safetensors file: the header is not a JSON object")
    header.pop("__metadata__", None)
    if not header:
        raise invalid("the safetensors file holds no tensors")
    data_bytes = size - 8 - header_len
    tensors, end_max = [], 0
    for name, info in header.items():
        tensor, end = _safetensors_entry(name, info, data_bytes)
        tensors.append(dataclasses.replace(tensor, data_start=8 + header_len + tensor.data_start))
        end_max = max(end_max, end)
    if end_max != data_bytes:
        raise invalid("the safetensors data section does not match its header")
    return tensors


def _safetensors_entry(name: str, info: object, data_bytes: int) -> tuple[Tensor, int]:
    if not isinstance(info, dict):
        raise invalid(f"tensor {name!r}: malformed header entry")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if dtype not in _SAFETENSORS_DTYPES:
        raise invalid(f"tensor {name!r}: unsupported dtype {dtype!r}")
    if not (isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)):
        raise invalid(f"tensor {name!r}: malformed shape")
    if not (
        isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
    ):
        raise invalid(f"tensor {name!r}: malformed data_offsets")
    start, end = offsets
    if (
        not 0 <= start <= end <= data_bytes
        or end - start != math.prod(shape) * _SAFETENSORS_DTYPES[dtype]
    ):
        raise invalid(f"tensor {name!r}: data_offsets do not match its shape and dtype")
    check_matrix(tuple(shape), f"tensor {name!r}")
    return Tensor(name, dtype, tuple(shape), data_start=start), end


def read_npy(f: BinaryIO, size: int) -> list[Tensor]:
    try:
        version = npy_format.read_magic(f)
        if version == (1, 0):
            shape, _fortran, dtype = npy_format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, _fortran, dtype = npy_format.read_array_header_2_0(f)
        else:
            raise invalid(f"unsupported .npy format version {version}")
    except (ValueError, EOFError) as exc:  # numpy's "not a .npy file" / malformed header
        raise invalid(f"not a .npy file: {exc}") from None
    if dtype.hasobject or dtype.kind not in "fiub":
        raise invalid(f"unsupported .npy dtype {dtype}")
    check_matrix(tuple(shape), "the array")
    if size - f.tell() != math.prod(shape) * dtype.itemsize:
        raise invalid("the .npy data size does not match its header")
    return [Tensor(None, str(np.dtype(dtype)), tuple(shape), data_start=f.tell())]


def inspect_file(path: Path) -> tuple[str, list[Tensor]]:
    """(format, tensors) from the file's extension and header, or InvalidInput."""
    size = path.stat().st_size
    with path.open("rb") as f:
        if path.suffix == ".npy":
            return "npy", read_npy(f, size)
        if path.suffix == ".safetensors":
            return "safetensors", read_safetensors(f, size)
    raise invalid("the name must end in .safetensors or .npy")


_SCAN_BYTES = 64 * 1024 * 1024  # read this much at a time: memory stays bounded
_FLOATS = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2"}


def _float_dtype(tensor: Tensor) -> np.dtype | None:
    """The dtype to scan the tensor's data as; None when it cannot hold NaN or Inf."""
    if tensor.dtype in _FLOATS:
        return np.dtype(_FLOATS[tensor.dtype])
    dtype = np.dtype(tensor.dtype) if tensor.name is None else None
    return dtype if dtype is not None and dtype.kind == "f" else None


def _bad_rows(block: np.ndarray, bfloat16: bool) -> np.ndarray:
    if bfloat16:  # exponent all ones: Inf or NaN
        return np.flatnonzero(((block & 0x7F80) == 0x7F80).any(axis=1))
    return np.flatnonzero(~np.isfinite(block).all(axis=1))


def check_finite(path: Path, tensors: list[Tensor], *, name: str | None = None) -> None:
    """Every value of every float tensor is finite, or InvalidInput naming the file, the tensor
    and the first row holding a NaN or Inf (training on it would only fail later)."""
    for tensor in tensors:
        dtype = _float_dtype(tensor)
        if dtype is None:
            continue
        rows, width = tensor.shape
        data = np.memmap(path, dtype=dtype, mode="r", offset=tensor.data_start, shape=(rows, width))
        step = max(1, _SCAN_BYTES // max(1, width * dtype.itemsize))
        for first in range(0, rows, step):
            bad = _bad_rows(np.asarray(data[first : first + step]), tensor.dtype == "BF16")
            if bad.size:
                what = f"tensor {tensor.name!r}" if tensor.name else "the array"
                row = first + int(bad[0])
                raise invalid(f"{name or path.name}: {what} holds NaN or Inf, first in row {row}")
