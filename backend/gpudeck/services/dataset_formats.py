"""Header checks for uploaded activation files: safetensors or .npy, each tensor [N, d_in].

Only headers are read and parsed; nothing is unpickled or evaluated (numpy's header reader uses
a literal parser, and object arrays, which would need pickle, are refused)."""

from __future__ import annotations

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
        tensors.append(tensor)
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
    return Tensor(name, dtype, tuple(shape)), end


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
    return [Tensor(None, str(np.dtype(dtype)), tuple(shape))]


def inspect_file(path: Path) -> tuple[str, list[Tensor]]:
    """(format, tensors) from the file's extension and header, or InvalidInput."""
    size = path.stat().st_size
    with path.open("rb") as f:
        if path.suffix == ".npy":
            return "npy", read_npy(f, size)
        if path.suffix == ".safetensors":
            return "safetensors", read_safetensors(f, size)
    raise invalid("the name must end in .safetensors or .npy")
