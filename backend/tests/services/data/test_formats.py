"""Header checks of activation files, read without loading them: each tensor's shape, dtype and
where its data begins (the finite scan reads from there), the header and data sizes held to each
other, and the scan for NaN or Inf naming the first bad row however the file is cut into blocks."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import numpy as np
import pytest
from numpy.lib import format as npy_format
from safetensors.numpy import save_file

from gpudeck.services.data import formats
from gpudeck.services.errors import InvalidInput


def safetensors_bytes(header: dict[str, object], data: bytes) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


def test_each_safetensors_tensor_knows_where_its_data_begins(tmp_path: Path) -> None:
    first = np.arange(12, dtype=np.float32).reshape(3, 4)
    second = np.arange(10, dtype=np.int64).reshape(5, 2)
    path = tmp_path / "acts.safetensors"
    save_file({"acts": first, "ids": second}, str(path), metadata={"model": "gpt2"})
    fmt, tensors = formats.inspect_file(path)
    assert fmt == "safetensors"
    shapes = {t.name: (t.dtype, t.shape) for t in tensors}
    assert shapes == {"acts": ("F32", (3, 4)), "ids": ("I64", (5, 2))}  # metadata is no tensor
    raw = path.read_bytes()
    for tensor, array in zip(
        sorted(tensors, key=lambda t: t.name or ""), (first, second), strict=True
    ):
        start = tensor.data_start
        assert raw[start : start + array.nbytes] == array.tobytes()


def test_a_safetensors_data_section_must_be_exactly_what_its_header_says(
    tmp_path: Path,
) -> None:
    header = {"t": {"dtype": "F16", "shape": [2, 2], "data_offsets": [0, 8]}}
    path = tmp_path / "t.safetensors"
    path.write_bytes(safetensors_bytes(header, b"\0" * 8))
    assert formats.inspect_file(path)[1][0].shape == (2, 2)
    path.write_bytes(safetensors_bytes(header, b"\0" * 12))  # trailing bytes no tensor owns
    with pytest.raises(InvalidInput, match="data section does not match its header"):
        formats.inspect_file(path)
    short = {"t": {"dtype": "F16", "shape": [2, 2], "data_offsets": [0, 6]}}
    path.write_bytes(safetensors_bytes(short, b"\0" * 6))  # offsets too short for the shape
    with pytest.raises(InvalidInput, match="data_offsets do not match its shape and dtype"):
        formats.inspect_file(path)
    path.write_bytes(safetensors_bytes(["t"], b""))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="not a JSON object") as info:
        formats.inspect_file(path)
    assert info.value.field == "body"


def npy_file(path: Path, array: np.ndarray, version: tuple[int, int]) -> None:
    buffer = io.BytesIO()
    npy_format.write_array(buffer, array, version=version)
    path.write_bytes(buffer.getvalue())


@pytest.mark.parametrize("version", [(1, 0), (2, 0)])
def test_npy_headers_of_either_version_give_shape_dtype_and_data_start(
    tmp_path: Path, version: tuple[int, int]
) -> None:
    array = np.arange(6, dtype=np.float16).reshape(2, 3)
    path = tmp_path / "a.npy"
    npy_file(path, array, version)
    fmt, [tensor] = formats.inspect_file(path)
    assert (fmt, tensor.name, tensor.dtype, tensor.shape) == ("npy", None, "float16", (2, 3))
    assert path.read_bytes()[tensor.data_start :] == array.tobytes()


@pytest.mark.parametrize("dtype", [np.complex64, np.dtype("U3")])
def test_npy_of_a_dtype_that_is_no_number_is_refused(tmp_path: Path, dtype: np.dtype) -> None:
    path = tmp_path / "a.npy"
    npy_file(path, np.zeros((2, 2), dtype=dtype), (1, 0))
    with pytest.raises(InvalidInput, match=r"unsupported \.npy dtype"):
        formats.inspect_file(path)


def test_only_the_two_formats_are_read(tmp_path: Path) -> None:
    path = tmp_path / "weights.pt"
    path.write_bytes(b"\x80\x04pickle")
    with pytest.raises(InvalidInput, match=r"must end in \.safetensors or \.npy"):
        formats.inspect_file(path)


def test_the_first_bad_row_is_named_across_scan_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    array = np.ones((40, 4), dtype=np.float32)
    array[29, 1] = np.inf
    array[33, 0] = np.nan
    path = tmp_path / "a.npy"
    np.save(path, array)
    _, tensors = formats.inspect_file(path)
    # Blocks of 3 rows: the bad rows sit in later blocks, at offsets within them.
    monkeypatch.setattr(formats, "_SCAN_BYTES", 3 * 4 * array.itemsize)
    with pytest.raises(InvalidInput) as info:
        formats.check_finite(path, tensors, name="upload.npy")
    assert str(info.value) == "body: upload.npy: the array holds NaN or Inf, first in row 29"


def bf16_tensor(path: Path, words: np.ndarray) -> list[formats.Tensor]:
    header = {"w": {"dtype": "BF16", "shape": list(words.shape), "data_offsets": [0, words.nbytes]}}
    path.write_bytes(safetensors_bytes(header, words.astype("<u2").tobytes()))
    return formats.inspect_file(path)[1]


@pytest.mark.parametrize(("word", "bad"), [(0x7FC0, True), (0xFF80, True), (0x7F7F, False)])
def test_bfloat16_nan_and_inf_are_found_and_its_largest_finite_kept(
    tmp_path: Path, word: int, bad: bool
) -> None:
    words = np.full((6, 2), 0x3F80, dtype=np.uint16)  # 1.0
    words[4, 1] = word  # NaN, -Inf, or the largest finite bfloat16
    path = tmp_path / "w.safetensors"
    tensors = bf16_tensor(path, words)
    if bad:
        with pytest.raises(InvalidInput, match="tensor 'w' holds NaN or Inf, first in row 4"):
            formats.check_finite(path, tensors)
    else:
        formats.check_finite(path, tensors)


def test_integer_tensors_are_not_scanned(tmp_path: Path) -> None:
    path = tmp_path / "ids.safetensors"
    # Integers whose bytes read as NaN were they float32: an integer holds no NaN.
    save_file({"ids": np.full((3, 2), 0x7FC00000, dtype=np.int32)}, str(path))
    formats.check_finite(path, formats.inspect_file(path)[1])
