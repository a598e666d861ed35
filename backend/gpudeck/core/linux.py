"""The two Linux process controls GPUDeck relies on (prctl), without a dependency."""

from __future__ import annotations

import ctypes
import os
import signal

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl({option}): {os.strerror(errno)}")


def die_with_parent(sig: signal.Signals = signal.SIGKILL) -> None:
    """The kernel sends `sig` to this process when the *thread* that forked it exits."""
    _prctl(_PR_SET_PDEATHSIG, int(sig))


def become_subreaper() -> None:
    """Orphaned descendants are reparented to this process, not to init: it can wait for them."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
