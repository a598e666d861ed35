"""A map job's output: one `chunk_<index>.safetensors` per chunk, a manifest, read in order.

A chunk is written to a temporary file, fsynced, then hard-linked to its final name: the link
fails if the name exists, so a chunk is never written twice, and a reader sees a whole file or
none. The manifest (written last, by rank 0) lists the chunks and their row counts.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from gpudeck.engine.files import fsync_path
from gpudeck.engine.safetensors_header import read_header

MANIFEST = "manifest.json"
JOB_FILE = "job.json"
_CHUNK = re.compile(r"^chunk_(\d+)\.safetensors$")


class OutputError(RuntimeError):
    """An output directory that is incomplete or inconsistent."""


def chunk_path(out_dir: Path, index: int) -> Path:
    return out_dir / f"chunk_{index:06d}.safetensors"


def written_chunks(out_dir: Path) -> set[int]:
    if not out_dir.is_dir():
        return set()
    return {int(m.group(1)) for p in out_dir.iterdir() if (m := _CHUNK.match(p.name))}


def remove_partial_writes(out_dir: Path) -> None:
    """Temporary files of a killed writer; call only while no rank of the job is writing."""
    if out_dir.is_dir():
        for path in out_dir.glob(".chunk_*.tmp"):
            path.unlink(missing_ok=True)


def write_chunk(out_dir: Path, index: int, tensors: Mapping[str, torch.Tensor]) -> bool:
    """Write chunk `index` atomically; False (and nothing written) if it already exists."""
    out_dir.mkdir(parents=True, exist_ok=True)
    final = chunk_path(out_dir, index)
    tmp = out_dir / f".chunk_{index:06d}.{os.getpid()}.tmp"
    save_file({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, str(tmp))
    fsync_path(tmp)
    try:
        os.link(tmp, final)
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    fsync_path(out_dir)
    return True


def check_job(out_dir: Path, job: Mapping[str, Any], *, write: bool) -> None:
    """Refuse an output directory holding another job's chunks: resume skips written chunks,
    which is right only if they came from the same input, chunking and computation. `job`
    describes those; the first run records it in `job.json` (`write`: rank 0 only)."""
    path = out_dir / JOB_FILE
    if path.exists():
        recorded = json.loads(path.read_text())
        if recorded != json.loads(json.dumps(job)):
            changed = sorted(k for k in {*recorded, *job} if recorded.get(k) != job.get(k))
            raise OutputError(
                f"{out_dir} holds chunks of a different job (differs in {', '.join(changed)}): "
                "choose another output directory"
            )
    elif write:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = out_dir / f".{JOB_FILE}.tmp"
        tmp.write_text(json.dumps(job, indent=2))
        os.replace(tmp, path)


def chunk_rows(out_dir: Path, index: int) -> dict[str, list[int]]:
    with safe_open(str(chunk_path(out_dir, index)), framework="numpy") as f:
        return {name: list(f.get_slice(name).get_shape()) for name in f.keys()}  # noqa: SIM118


def write_manifest(out_dir: Path, num_chunks: int, meta: Mapping[str, Any]) -> dict[str, Any]:
    """Rank 0, once every chunk is written: the chunk list with shapes, plus `meta`."""
    missing = sorted(set(range(num_chunks)) - written_chunks(out_dir))
    if missing:
        raise OutputError(f"{len(missing)} chunks are missing, first {missing[0]}")
    shapes = [chunk_rows(out_dir, i) for i in range(num_chunks)]
    names = sorted(shapes[0]) if shapes else []
    manifest = {
        "num_chunks": num_chunks,
        "tensors": names,
        "rows": {n: sum(s[n][0] for s in shapes) for n in names},
        "chunks": [
            {"file": chunk_path(out_dir, i).name, "shapes": shape} for i, shape in enumerate(shapes)
        ],
        **meta,
    }
    tmp = out_dir / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2))
    fsync_path(tmp)
    os.replace(tmp, out_dir / MANIFEST)
    fsync_path(out_dir)
    return manifest


def read_manifest(out_dir: Path) -> dict[str, Any]:
    path = Path(out_dir) / MANIFEST
    if not path.exists():
        raise OutputError(f"{out_dir} has no manifest: the job has not finished")
    manifest: dict[str, Any] = json.loads(path.read_text())
    return manifest


def read_output(out_dir: str | Path) -> dict[str, torch.Tensor]:
    """The whole output, each tensor concatenated over the chunks in input order."""
    out_dir = Path(out_dir)
    manifest = read_manifest(out_dir)
    parts: dict[str, list[torch.Tensor]] = {name: [] for name in manifest["tensors"]}
    for chunk in manifest["chunks"]:
        with safe_open(str(out_dir / chunk["file"]), framework="pt") as f:
            for name in parts:
                parts[name].append(f.get_tensor(name))
    return {name: torch.cat(tensors) for name, tensors in parts.items()}


def consolidate(out_dir: Path, name: str, dest: Path) -> Path:
    """Stream tensor `name` of every chunk, in order, into one .safetensors file at `dest`
    (rows concatenated), without holding more than one chunk in memory. Atomic."""
    manifest = read_manifest(out_dir)
    shapes = [c["shapes"][name] for c in manifest["chunks"]]
    if not shapes:
        raise OutputError("no chunks to consolidate")
    dtype = _tensor_header(out_dir / manifest["chunks"][0]["file"], name)[0]["dtype"]
    itemsize = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I64": 8, "I32": 4}[dtype]
    shape = [sum(s[0] for s in shapes), *shapes[0][1:]]
    nbytes = int(np.prod(shape)) * itemsize
    header = json.dumps({name: {"dtype": dtype, "shape": shape, "data_offsets": [0, nbytes]}})
    header_bytes = header.encode()
    header_bytes += b" " * (-len(header_bytes) % 8)  # the data starts 8-byte aligned
    tmp = dest.with_name(f".{dest.name}.tmp")
    with tmp.open("wb") as out:
        out.write(len(header_bytes).to_bytes(8, "little") + header_bytes)
        for chunk in manifest["chunks"]:
            out.write(_raw_tensor_bytes(out_dir / chunk["file"], name))
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, dest)
    fsync_path(dest.parent)
    return dest


def _tensor_header(path: Path, name: str) -> tuple[dict[str, Any], int]:
    """Tensor `name`'s header entry in a .safetensors file, and where its data section starts."""
    header, data_start = read_header(path)
    return header[name], data_start


def _raw_tensor_bytes(path: Path, name: str) -> bytes:
    """The stored bytes of one tensor (any dtype, bfloat16 included) straight from the file."""
    info, data_start = _tensor_header(path, name)
    start, stop = info["data_offsets"]
    with path.open("rb") as f:
        f.seek(data_start + start)
        return f.read(stop - start)
