"""The Linux process controls GPUDeck relies on (prctl), and a process's children as the kernel
lists them, without a dependency."""

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


def children(pid: int) -> list[int] | None:
    """`pid`'s children, from each of its threads' list in /proc (a child belongs to the
    thread that forked it); [] when `pid` is gone, None when this kernel keeps no such list
    (CONFIG_PROC_CHILDREN). A child forked or exiting during the read may be missed: callers
    that must see every one look again."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/children", "rb") as listed:
                found += [int(child) for child in listed.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{thread}"):
                continue  # that thread ended since the listing
            return None
        except OSError:
            continue
    return found
