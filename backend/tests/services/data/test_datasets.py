"""Dataset uploads through the service: the size cap holds to the byte, an empty or refused
upload leaves nothing behind (no temporary file either), a name already taken (a dangling link
too) is refused before the body is read, and the listing shows only finished, readable files."""

from __future__ import annotations

import io
import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import numpy as np
import pytest

from gpudeck.services.data import datasets
from gpudeck.services.errors import InvalidInput


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


class Body:
    """An upload's body in chunks, remembering whether anyone read it."""

    def __init__(self, data: bytes, chunk_bytes: int = 64) -> None:
        self.chunks = [data[i : i + chunk_bytes] for i in range(0, len(data), chunk_bytes)]
        self.read = False

    async def stream(self) -> AsyncIterator[bytes]:
        self.read = True
        for chunk in self.chunks:
            yield chunk


def upload(data_dir: Path, name: str, body: Body, max_bytes: int) -> datasets.DatasetInfo:
    return anyio.run(datasets.save_upload, data_dir, name, body.stream(), max_bytes)


def test_the_cap_holds_to_the_byte_and_a_refused_upload_leaves_nothing(tmp_path: Path) -> None:
    data = npy_bytes(np.ones((20, 4), dtype=np.float32))
    with pytest.raises(datasets.DatasetTooLarge) as info:
        upload(tmp_path, "over.npy", Body(data), max_bytes=len(data) - 1)
    assert (info.value.field, info.value.code) == ("body", "body_too_large")
    assert os.listdir(tmp_path / "datasets") == []  # the temporary file is gone too

    info_at_cap = upload(tmp_path, "at_cap.npy", Body(data), max_bytes=len(data))
    assert (info_at_cap.name, info_at_cap.format, info_at_cap.size_bytes) == (
        "at_cap.npy",
        "npy",
        len(data),
    )
    assert [t.shape for t in info_at_cap.tensors] == [(20, 4)]
    assert os.listdir(tmp_path / "datasets") == ["at_cap.npy"]
    assert np.array_equal(np.load(tmp_path / "datasets" / "at_cap.npy"), np.ones((20, 4)))


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "the upload is empty"),
        (npy_bytes(np.ones((5, 2), np.float32))[:-4], "data size does not match its header"),
    ],
)
def test_an_empty_or_bad_upload_is_refused_and_leaves_nothing(
    tmp_path: Path, body: bytes, reason: str
) -> None:
    with pytest.raises(InvalidInput, match=reason):
        upload(tmp_path, "bad.npy", Body(body), max_bytes=1 << 20)
    assert os.listdir(tmp_path / "datasets") == []


def test_a_taken_name_is_refused_before_the_body_is_read(tmp_path: Path) -> None:
    root = datasets.datasets_dir(tmp_path)
    (root / "taken.npy").write_bytes(b"keep")
    os.symlink(root / "nowhere.npy", root / "dangling.npy")  # a link to nothing is a name
    for name in ("taken.npy", "dangling.npy"):
        body = Body(npy_bytes(np.ones((2, 2), np.float32)))
        with pytest.raises(datasets.DatasetExists, match=name):
            upload(tmp_path, name, body, max_bytes=1 << 20)
        assert not body.read
    assert (root / "taken.npy").read_bytes() == b"keep"
    assert not (root / "nowhere.npy").exists()  # nothing written through the link
    with pytest.raises(InvalidInput, match="must be a plain file name"):
        datasets.destination(root, "sub/acts.npy")


def test_the_listing_shows_finished_readable_files_by_name(tmp_path: Path) -> None:
    root = datasets.datasets_dir(tmp_path)
    np.save(root / "b.npy", np.ones((3, 2), np.float32))
    np.save(root / "a.npy", np.ones((4, 2), np.float32))
    np.save(root / ".upload-0123.npy", np.ones((4, 2), np.float32))  # an upload in progress
    (root / "broken.npy").write_bytes(b"not numpy")
    (root / "dir.npy").mkdir()
    os.symlink(root / "a.npy", root / "link.npy")
    listed = datasets.list_datasets(tmp_path)
    assert [(d.name, d.tensors[0].shape) for d in listed] == [("a.npy", (4, 2)), ("b.npy", (3, 2))]
