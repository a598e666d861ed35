"""Dataset uploads: streamed, capped, format-checked, never outside <data_dir>/datasets."""

from __future__ import annotations

import io
import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from harness import auth_headers
from safetensors.numpy import save

from gpudeck.core.config import Settings
from gpudeck.main import create_app


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def upload(client: TestClient, name: str, body: bytes) -> object:
    return client.post(
        "/api/datasets",
        params={"name": name},
        content=body,
        headers={"Content-Type": "application/octet-stream"},
    )


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_valid_uploads_are_stored_and_listed(client: TestClient, settings: Settings) -> None:
    acts = np.random.default_rng(0).standard_normal((100, 16)).astype(np.float32)
    made = upload(client, "acts.npy", npy_bytes(acts))
    assert made.status_code == 201, made.text  # type: ignore[attr-defined]
    assert made.json()["tensors"] == [{"name": None, "dtype": "float32", "shape": [100, 16]}]  # type: ignore[attr-defined]
    st = save({"acts": acts, "more": acts[:10]})
    assert upload(client, "acts.safetensors", st).status_code == 201  # type: ignore[attr-defined]
    listed = client.get("/api/datasets").json()
    assert [d["name"] for d in listed] == ["acts.npy", "acts.safetensors"]
    stored = settings.data_dir / "datasets" / "acts.npy"
    assert np.array_equal(np.load(stored), acts)
    assert upload(client, "acts.npy", npy_bytes(acts)).status_code == 409  # type: ignore[attr-defined]


BAD = {
    "3-D": npy_bytes(np.zeros((2, 3, 4), np.float32)),
    "1-D": npy_bytes(np.zeros(5, np.float32)),
    "empty rows": npy_bytes(np.zeros((0, 4), np.float32)),
    "object (pickle)": npy_bytes(np.array([[{"a": 1}]], dtype=object)),
    "truncated": npy_bytes(np.zeros((10, 4), np.float32))[:-8],
    "not npy": b"#!/bin/sh\nrm -rf /\n",
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_npy_is_refused_and_deleted(client: TestClient, settings: Settings, case: str) -> None:
    response = upload(client, "bad.npy", BAD[case])
    assert response.status_code == 422, (case, response.text)  # type: ignore[attr-defined]
    assert files_under(settings.data_dir / "datasets") == set()


def safetensors_with(header: object, data: bytes = b"") -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


BAD_ST = {
    "3-D": safetensors_with(
        {"t": {"dtype": "F32", "shape": [1, 1, 1], "data_offsets": [0, 4]}}, b"\0" * 4
    ),
    "offsets past end": safetensors_with(
        {"t": {"dtype": "F32", "shape": [1, 1], "data_offsets": [0, 4]}}
    ),
    "huge header length": struct.pack("<Q", 2**62) + b"{}",
    "not json": struct.pack("<Q", 4) + b"\xff\xfe{{",
    "no tensors": safetensors_with({"__metadata__": {}}),
    "bad dtype": safetensors_with(
        {"t": {"dtype": "PICKLE", "shape": [1, 1], "data_offsets": [0, 1]}}, b"\0"
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_ST))
def test_bad_safetensors_is_refused(client: TestClient, settings: Settings, case: str) -> None:
    response = upload(client, "bad.safetensors", BAD_ST[case])
    assert response.status_code == 422, (case, response.text)  # type: ignore[attr-defined]
    assert files_under(settings.data_dir / "datasets") == set()


@pytest.mark.parametrize(
    "name",
    [
        "../evil.npy",
        "/tmp/evil.npy",
        "..%2fevil.npy",
        "%2e%2e%2fevil.npy",
        "%252e%252e%252fevil.npy",
        "sub/evil.npy",
        ".hidden.npy",
        "evil.sh",
        "evil.npy\x00.txt",
        "..\\evil.npy",
        "...",
    ],
)
def test_traversal_names_are_refused(
    client: TestClient, settings: Settings, tmp_path: Path, name: str
) -> None:
    before = files_under(tmp_path)
    response = upload(client, name, npy_bytes(np.zeros((2, 2), np.float32)))
    assert 400 <= response.status_code < 500, name  # type: ignore[attr-defined]
    after = files_under(tmp_path) - {"data", "data/datasets"}
    assert after == before - {"data", "data/datasets"}, name


def test_symlink_in_datasets_is_not_written_through(
    client: TestClient, settings: Settings, tmp_path: Path
) -> None:
    root = settings.data_dir / "datasets"
    root.mkdir(parents=True)
    outside = tmp_path / "outside.npy"
    outside.write_bytes(b"keep")
    os.symlink(outside, root / "link.npy")
    response = upload(client, "link.npy", npy_bytes(np.zeros((2, 2), np.float32)))
    assert response.status_code in (409, 422)  # type: ignore[attr-defined]
    assert outside.read_bytes() == b"keep"
    assert client.get("/api/datasets").json() == []  # links are never listed


def test_size_cap(settings: Settings, session_factory: object, admin_token: str) -> None:
    small = settings.model_copy(update={"max_dataset_bytes": 4096})
    with TestClient(create_app(small), headers=auth_headers(admin_token)) as client:
        big = npy_bytes(np.zeros((100, 16), np.float32))
        assert upload(client, "big.npy", big).status_code == 413  # type: ignore[attr-defined]

        def chunks() -> object:  # no Content-Length: the cap applies while streaming
            for i in range(0, len(big), 1000):
                yield big[i : i + 1000]

        streamed = client.post("/api/datasets", params={"name": "big.npy"}, content=chunks())  # type: ignore[arg-type]
        assert streamed.status_code == 413
        assert files_under(small.data_dir / "datasets") == set()
        # Other routes keep the small general limit.
        assert client.post("/api/jobs", content=b"x" * (2 * 1024 * 1024)).status_code == 413


def test_upload_needs_a_token(anonymous: TestClient, settings: Settings) -> None:
    response = upload(anonymous, "a.npy", npy_bytes(np.zeros((2, 2), np.float32)))
    assert response.status_code == 401  # type: ignore[attr-defined]
    assert not (settings.data_dir / "datasets" / "a.npy").exists()
