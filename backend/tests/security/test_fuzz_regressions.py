"""Inputs the fuzzer found that once caused a 500; each must now be a 4xx."""

from __future__ import annotations

import asyncio
import json

from gpudeck.api.errors import domain_error_handler
from gpudeck.core.security import host_allowed
from gpudeck.services.errors import InvalidInput


def test_non_ascii_digits_in_error_paths() -> None:
    """`"²".isdigit()` is True but `int("²")` raises: a config key "²" was a 500."""
    response = asyncio.run(domain_error_handler(None, InvalidInput([("config.²", "extra")])))  # type: ignore[arg-type]
    assert response.status_code == 422
    assert json.loads(response.body)["detail"][0]["loc"] == ["body", "config", "²"]


def test_non_ascii_digits_in_host_ports() -> None:
    assert not host_allowed("localhost:²", frozenset({"localhost"}))
