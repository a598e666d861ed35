"""The event a long-running command (`run`, `node`, `scheduler`, `sampler`) waits on: Ctrl-C or
a service manager's SIGTERM sets it, and the command then shuts its parts down in order instead
of dying mid-write."""

from __future__ import annotations

import signal
import threading
from types import FrameType


def stop_on_signals() -> threading.Event:
    """Install SIGINT and SIGTERM handlers (main thread only) that set the returned event."""
    stop = threading.Event()

    def on_signal(signum: int, _: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    return stop
