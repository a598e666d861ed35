"""A .safetensors file's header read without its tensors (8-byte little-endian length, then a
JSON object of name -> dtype, shape, data_offsets, plus an optional "__metadata__"), for the
files GPUDeck itself wrote or was pointed at. Uploads are validated apart, defensively
(services/data/formats.py)."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any


def read_header(path: Path) -> tuple[dict[str, Any], int]:
    """(the header, "__metadata__" included, and the offset where the data section starts)."""
    with path.open("rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(size)), 8 + size
