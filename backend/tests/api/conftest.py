"""Fixtures the API tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from sqlalchemy import create_engine

from gpudeck.core.config import Settings
from gpudeck.scheduler.duties import Context
from gpudeck.scheduler.service import Scheduler


@pytest.fixture
def scheduler(settings: Settings, redis_client: redis.Redis) -> Iterator[Context]:
    """The scheduler's context, for a test that runs its passes itself (schedule_queue)."""
    engine = create_engine(settings.sqlalchemy_url, pool_size=2)
    try:
        yield Scheduler(settings, engine, redis_client).ctx
    finally:
        engine.dispose()
