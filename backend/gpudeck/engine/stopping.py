"""The one way a job's processes are stopped, whatever started them (ranks or a command)."""

from __future__ import annotations

import time
from typing import Protocol


class StoppableGroup(Protocol):
    @property
    def done(self) -> bool: ...

    def wait(self, timeout_s: float) -> dict[int, int]: ...

    def request_stop(self) -> None: ...

    def kill(self) -> dict[int, int]: ...


def stop_within(group: StoppableGroup, grace_s: float) -> dict[int, int]:
    """SIGTERM (through `request_stop`), up to `grace_s` to finish (rank 0 writes a final
    checkpoint), then `kill`: no process of the job survives."""
    if not group.done:
        group.request_stop()
    deadline = time.monotonic() + grace_s
    while not group.done and time.monotonic() < deadline:
        group.wait(min(0.2, max(0.0, deadline - time.monotonic())))
    return group.kill()
