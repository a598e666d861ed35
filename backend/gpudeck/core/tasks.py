"""Stopping an asyncio task for certain."""

from __future__ import annotations

import asyncio
import contextlib

RECANCEL_S = 0.1


async def cancel_and_wait(task: asyncio.Task[object], *, recancel_s: float = RECANCEL_S) -> None:
    """Cancel `task` until it has ended, however often it takes.

    One `cancel()` is not enough on Python 3.11: `asyncio.wait_for` returns the inner result and
    drops the cancellation when both arrive in the same loop iteration (CPython gh-86296, fixed
    in 3.12). redis-py wraps every command it sends in `wait_for` when a socket timeout is set,
    so a reader loop cancelled mid-command can carry on as if nothing happened, and a single
    `await task` then waits for ever (it hung the API's shutdown). Re-cancelling lands at the
    task's next await.
    """
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=recancel_s)
    with contextlib.suppress(asyncio.CancelledError):
        task.exception()  # retrieved, so asyncio does not log it as never retrieved
