"""The `dynamic` strategy's shared queue: ranks claim the next pending chunk under a file lock.

A counter in a file beside the output, read and bumped under `flock`: no service beyond the
file system the ranks already share (one host). Rank 0 resets it before the ranks' first
barrier, so a resumed job starts over on its own pending list.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class ClaimQueue:
    def __init__(self, path: Path, pending: list[int]) -> None:
        self.path = path
        self.pending = pending

    def reset(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text("0")
        os.replace(tmp, self.path)

    def claim(self) -> int | None:
        """The next pending chunk index, or None when every one has been claimed."""
        fd = os.open(self.path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            position = int(os.pread(fd, 32, 0) or b"0")
            if position >= len(self.pending):
                return None
            data = str(position + 1).encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
            return self.pending[position]
        finally:
            os.close(fd)  # closing releases the lock
