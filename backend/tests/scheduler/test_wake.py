"""Wake-ups: anything that can free or unblock devices wakes the scheduler at once; a burst of
submits that only queue shares one pass, no sooner than the arrival gap after the last."""

from __future__ import annotations

import threading
import time

import pytest
import redis
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from gpudeck.core.config import Settings
from gpudeck.scheduler.service import Scheduler
from gpudeck.scheduler.wake import WakeListener, WakeSignal
from gpudeck.services.jobs import state as job_state


def test_an_urgent_wake_up_is_at_once_and_is_consumed() -> None:
    signal = WakeSignal()
    signal.set()
    started = time.monotonic()
    assert signal.wait(5, arrivals_not_before=started + 60) is True
    assert time.monotonic() - started < 1
    assert signal.wait(0.05) is False  # consumed: nothing more to wake for


def test_arrivals_wait_for_the_gap_then_wake_once() -> None:
    signal = WakeSignal()
    for _ in range(100):  # a burst of submits
        signal.set(arrival=True)
    started = time.monotonic()
    assert signal.wait(5, arrivals_not_before=started + 0.3) is True
    assert time.monotonic() - started >= 0.3
    assert signal.wait(0.05) is False  # the whole burst was one wake-up


def test_an_urgent_wake_up_cuts_an_arrival_gap_short() -> None:
    signal = WakeSignal()
    signal.set(arrival=True)
    threading.Timer(0.1, signal.set).start()  # a job ends meanwhile
    started = time.monotonic()
    assert signal.wait(10, arrivals_not_before=started + 8) is True
    assert time.monotonic() - started < 5


def test_with_nothing_heard_the_wait_times_out() -> None:
    started = time.monotonic()
    assert WakeSignal().wait(0.2) is False
    assert time.monotonic() - started >= 0.2


def _notify(db: Session, *, arrival: bool) -> None:
    job_state.wake_scheduler(db, arrival=arrival)
    db.commit()


def test_the_listener_tells_arrivals_from_freed_devices(settings: Settings, db: Session) -> None:
    listener = WakeListener(settings.sqlalchemy_url)
    listener.start()
    try:
        assert listener.signal.wait(10) is True  # connected: a pass finds what was missed
        _notify(db, arrival=True)
        started = time.monotonic()
        assert listener.signal.wait(10, arrivals_not_before=started + 0.5) is True
        assert time.monotonic() - started >= 0.5  # an arrival waited for its gap
        _notify(db, arrival=False)
        started = time.monotonic()
        assert listener.signal.wait(10, arrivals_not_before=started + 60) is True
        assert time.monotonic() - started < 5  # freed devices: at once, gap or not
    finally:
        listener.stop()


def test_a_slow_pass_spaces_the_next_arrival_pass_by_twice_its_length(
    settings: Settings, redis_client: redis.Redis
) -> None:
    settings.scheduler_arrival_gap_s = 0.2
    engine = create_engine(settings.sqlalchemy_url, pool_size=1)
    try:
        scheduler = Scheduler(settings, engine, redis_client)
        assert scheduler.next_arrival_pass(10.0, 10.05) == pytest.approx(10.25)  # the gap
        assert scheduler.next_arrival_pass(10.0, 10.5) == pytest.approx(11.5)  # 2 x 0.5 s
    finally:
        engine.dispose()
