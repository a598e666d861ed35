"""multiprocessing's forkserver Process, safe to poll from several threads at once.

CPython reads a forkserver child's exit status from a pipe that the forkserver writes once
(`popen_forkserver.Popen.poll`). Two threads that both find the pipe readable both read it:
one gets the status, the other gets EOF and records 255, over the real status
(python/cpython#130895; 3.11 to 3.14 have no fix). A worker polls from several threads: each
job's supervisor polls its own ranks, and every `Process.start()` polls *all* children of the
process (`multiprocessing.process._cleanup`). So one job's start could turn another job's
clean exit into "rank 0 exited with code 255" and fail that job (tests/e2e/test_queue_race.py
did, about one run in ten on a loaded machine).

Here a lock per child makes that read happen once. A blocking poll waits for the exit before
it takes the lock, so a start never waits on another job's rank.
"""

from __future__ import annotations

import os
import threading
from multiprocessing import popen_forkserver
from multiprocessing.connection import wait
from multiprocessing.context import ForkServerProcess as _BaseForkServerProcess
from multiprocessing.process import BaseProcess


class _SerialPollPopen(popen_forkserver.Popen):
    def __init__(self, process_obj: BaseProcess) -> None:
        self._poll_lock = threading.Lock()
        super().__init__(process_obj)

    def poll(self, flag: int = os.WNOHANG) -> int | None:
        if flag != os.WNOHANG and self.returncode is None:
            wait([self.sentinel])
        with self._poll_lock:
            return super().poll(os.WNOHANG)


class ForkServerProcess(_BaseForkServerProcess):
    """A child of the forkserver whose exit code any thread may ask for."""

    @staticmethod
    def _Popen(process_obj: BaseProcess) -> _SerialPollPopen:
        return _SerialPollPopen(process_obj)
