"""The stop event of `run`, `node`, `scheduler` and `sampler`: Ctrl-C and SIGTERM both set it."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from gpudeck.cli.stopping import stop_on_signals


@pytest.fixture
def restored_handlers() -> Iterator[None]:
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_either_signal_sets_the_stop_event_instead_of_ending_the_process(
    sig: signal.Signals, restored_handlers: None
) -> None:
    stop = stop_on_signals()
    assert not stop.is_set()
    signal.raise_signal(sig)  # runs the Python handler before it returns
    assert stop.is_set()
