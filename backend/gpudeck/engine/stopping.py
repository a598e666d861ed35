"""The one way a job's processes are stopped, whatever started them: `JobProcesses` is the base
of launch.RankGroup (built-in kinds' ranks) and command.CommandGroup (a kind's own program),
which each say how to signal, wait on and kill their processes."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from signal import SIGTERM, Signals


class JobProcesses(ABC):
    @property
    @abstractmethod
    def done(self) -> bool: ...

    @abstractmethod
    def wait(self, timeout_s: float) -> dict[int, int]:
        """Up to `timeout_s` for the processes to exit; {rank: exit code} of those that have."""

    @abstractmethod
    def signal(self, sig: Signals) -> None: ...

    @abstractmethod
    def kill(self) -> dict[int, int]:
        """SIGKILL what is left and reap it: no process of the job survives."""

    def request_stop(self) -> None:
        """SIGTERM: each rank finishes its step, rank 0 writes a final checkpoint, they exit
        (a command's torchrun forwards it to its ranks)."""
        self.signal(SIGTERM)

    def stop(self, grace_s: float) -> dict[int, int]:
        """SIGTERM (through `request_stop`), up to `grace_s` to finish, then `kill`."""
        if not self.done:
            self.request_stop()
        deadline = time.monotonic() + grace_s
        while not self.done and time.monotonic() < deadline:
            self.wait(min(0.2, max(0.0, deadline - time.monotonic())))
        return self.kill()
