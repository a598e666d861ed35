"""Datasets: activation files under <data_dir>/datasets, uploaded as a stream.

An upload goes to a temporary file beside its destination, is capped while it streams, checked
(header and shape), then linked into place without replacing anything; on any failure the
temporary file is deleted. Nothing outside the datasets directory is read or written."""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import anyio.to_thread

from gpudeck.core.paths import UnsafePath, safe_join
from gpudeck.services.data.formats import Tensor, check_finite, inspect_file, invalid
from gpudeck.services.errors import Conflict, InvalidInput, TooLarge


class DatasetExists(Conflict):
    def __init__(self, name: str) -> None:
        super().__init__(
            message=f"dataset {name!r} already exists", field="name", code="dataset_exists"
        )


class DatasetTooLarge(TooLarge):
    def __init__(self, limit: int) -> None:
        super().__init__(
            message=f"the upload exceeds the limit of {limit} bytes",
            field="body",
            code="body_too_large",
        )


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    format: str
    size_bytes: int
    tensors: list[Tensor]
    modified_at: datetime


def datasets_dir(data_dir: Path) -> Path:
    path = data_dir / "datasets"
    path.mkdir(parents=True, exist_ok=True)
    return path


def destination(root: Path, name: str) -> Path:
    try:
        target = safe_join(root, name)
    except UnsafePath as exc:
        raise InvalidInput([("name", str(exc))]) from None
    if target.parent != root.resolve():
        raise InvalidInput([("name", "must be a plain file name")])
    if os.path.lexists(root / name) or target.exists():
        raise DatasetExists(name)
    return target


async def save_upload(
    data_dir: Path, name: str, chunks: AsyncIterator[bytes], max_bytes: int
) -> DatasetInfo:
    root = datasets_dir(data_dir)
    target = destination(root, name)
    temp = root / f".upload-{secrets.token_hex(8)}{target.suffix}"
    try:
        await _write_capped(temp, chunks, max_bytes)
        info = await anyio.to_thread.run_sync(_check_and_publish, temp, target)
    finally:
        temp.unlink(missing_ok=True)
    return info


async def _write_capped(temp: Path, chunks: AsyncIterator[bytes], max_bytes: int) -> None:
    # O_EXCL|O_NOFOLLOW: never write through a file or link someone placed there first.
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o640)
    with os.fdopen(fd, "wb") as f:
        written = 0
        async for chunk in chunks:
            written += len(chunk)
            if written > max_bytes:
                raise DatasetTooLarge(max_bytes)
            await anyio.to_thread.run_sync(f.write, chunk)
        if written == 0:
            raise invalid("the upload is empty")
        await anyio.to_thread.run_sync(os.fsync, f.fileno())


def _check_and_publish(temp: Path, target: Path) -> DatasetInfo:
    info = describe(temp)  # raises InvalidInput on a bad header or shape
    check_finite(temp, info.tensors, name=target.name)
    try:
        os.link(temp, target)  # atomic, and never replaces an existing name
    except FileExistsError:
        raise DatasetExists(target.name) from None
    return describe(target)


def describe(path: Path) -> DatasetInfo:
    fmt, tensors = inspect_file(path)
    stat = path.stat()
    return DatasetInfo(
        name=path.name,
        format=fmt,
        size_bytes=stat.st_size,
        tensors=tensors,
        modified_at=datetime.fromtimestamp(stat.st_mtime, UTC),
    )


def list_datasets(data_dir: Path) -> list[DatasetInfo]:
    """Regular files with a valid header; links and anything unreadable are left out."""
    root = datasets_dir(data_dir)
    found = []
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        if entry.name.startswith(".") or not entry.is_file(follow_symlinks=False):
            continue
        try:
            found.append(describe(Path(entry.path)))
        except (InvalidInput, OSError):
            continue
    return found
