"""Fixtures for the security tests: users of each role and an app without a default token."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from harness import create_token
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings
from gpudeck.main import create_app


@pytest.fixture
def anonymous(settings: Settings, session_factory: sessionmaker[Session]) -> Iterator[TestClient]:
    """A client that sends no token unless a request names one."""
    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.fixture
def alice(session_factory: sessionmaker[Session]) -> str:
    return create_token(session_factory, "user", "alice")


@pytest.fixture
def bob(session_factory: sessionmaker[Session]) -> str:
    return create_token(session_factory, "user", "bob")
