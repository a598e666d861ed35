"""Activations holding NaN or Inf are refused at upload, naming the file, tensor and first bad
row: accepted, they would fail the job later (non-finite metrics cannot be stored as JSON)."""

from __future__ import annotations

import io
import json
import struct

import numpy as np
import pytest
from fastapi.testclient import TestClient
from safetensors.numpy import save

from gpudeck.core.config import Settings


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def acts(dtype: type = np.float32, bad_row: int | None = None, value: float = np.nan) -> np.ndarray:
    array = np.random.default_rng(0).standard_normal((50, 8)).astype(dtype)
    if bad_row is not None:
        array[bad_row, 3] = value
        array[bad_row + 2, 1] = value  # the first bad row is the one named
    return array


CASES = {
    "npy float32 NaN": ("a.npy", lambda: npy_bytes(acts(bad_row=7)), "the array", 7),
    "npy float64 -Inf": ("a.npy", lambda: npy_bytes(acts(np.float64, 0, -np.inf)), "the array", 0),
    "npy float16 Inf": ("a.npy", lambda: npy_bytes(acts(np.float16, 40, np.inf)), "the array", 40),
    "safetensors second tensor": (
        "a.safetensors",
        lambda: save({"good": acts(), "acts": acts(bad_row=12)}),
        "tensor 'acts'",
        12,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_nonfinite_upload_is_refused_naming_file_and_row(
    client: TestClient, settings: Settings, case: str
) -> None:
    name, body, what, row = CASES[case]
    response = client.post(
        "/api/datasets",
        params={"name": name},
        content=body(),
        headers={"Content-Type": "application/octet-stream"},
    )
    assert response.status_code == 422, response.text
    message = response.json()["detail"][0]["msg"]
    assert f"{name}: {what} holds NaN or Inf, first in row {row}" == message
    assert list((settings.data_dir / "datasets").iterdir()) == []


def bf16_safetensors(words: np.ndarray) -> bytes:
    """numpy has no bfloat16: the raw 16-bit words under a BF16 header."""
    header = {
        "acts": {"dtype": "BF16", "shape": list(words.shape), "data_offsets": [0, words.nbytes]}
    }
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + words.astype("<u2").tobytes()


def test_bfloat16_inf_is_found_and_finite_is_kept(client: TestClient) -> None:
    words = np.full((20, 4), 0x3F80, dtype=np.uint16)  # bfloat16 1.0
    ok = client.post(
        "/api/datasets", params={"name": "b.safetensors"}, content=bf16_safetensors(words)
    )
    assert ok.status_code == 201, ok.text
    words[9, 2] = 0x7F80  # +Inf
    refused = client.post(
        "/api/datasets", params={"name": "c.safetensors"}, content=bf16_safetensors(words)
    )
    assert refused.status_code == 422
    assert "first in row 9" in refused.json()["detail"][0]["msg"]
