"""Writes wait out an unreachable store; any other error is raised at once."""

from __future__ import annotations

import pytest
import redis
from sqlalchemy.exc import IntegrityError

from gpudeck.worker import retry


def test_an_unreachable_store_is_retried_until_it_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "FIRST_DELAY_S", 0.001)
    attempts: list[int] = []

    def write() -> str:
        attempts.append(1)
        if len(attempts) < 4:
            raise redis.ConnectionError("Connection refused")
        return "stored"

    assert retry.until_stored(write, "a test write") == "stored"
    assert len(attempts) == 4


def test_a_wrong_write_is_not_retried() -> None:
    attempts: list[int] = []

    def write() -> None:
        attempts.append(1)
        raise IntegrityError("INSERT", {}, Exception("duplicate key"))

    with pytest.raises(IntegrityError):
        retry.until_stored(write, "a test write")
    assert len(attempts) == 1
