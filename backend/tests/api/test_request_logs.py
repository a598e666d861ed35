"""uvicorn's logs of a real server: no token, whatever refuses or serves the request, and a
refused WebSocket handshake is logged at INFO, never ERROR."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import httpx
import pytest
from harness import live_server
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from gpudeck.api.log_filters import UVICORN_LOGGERS, redact
from gpudeck.core.config import Settings

SECRET = "gdk_SECRETvalue123"


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.format(record)  # as a real handler would: msg % args
        self.records.append(record)


@pytest.fixture
def server(settings: Settings) -> Iterator[tuple[str, Collect]]:
    handler = Collect()
    with live_server(settings) as url:
        loggers = [logging.getLogger(n) for n in UVICORN_LOGGERS]
        levels = [lg.level for lg in loggers]
        for lg in loggers:
            lg.setLevel(logging.INFO)
            lg.addHandler(handler)
        try:
            yield url, handler
        finally:
            for lg, level in zip(loggers, levels, strict=True):
                lg.removeHandler(handler)
                lg.setLevel(level)


def refused_ws(url: str, **headers: str) -> int:
    with pytest.raises(InvalidStatus) as refused:
        connect(url, additional_headers=headers, open_timeout=10).close()
    return refused.value.response.status_code


def test_no_token_in_logs_and_refusals_are_info(
    server: tuple[str, Collect], admin_token: str
) -> None:
    url, logs = server
    ws = url.replace("http://", "ws://")
    assert httpx.get(f"{url}/api/jobs?token={SECRET}").status_code == 401  # plain HTTP
    assert (
        httpx.get(
            f"{url}/api/jobs?limit=5&token={SECRET}", headers={"Host": "evil.example"}
        ).status_code
        == 403
    )
    assert refused_ws(f"{ws}/ws/telemetry?token={SECRET}", Origin="http://evil.example") == 403
    assert refused_ws(f"{ws}/ws/telemetry?token={SECRET}") == 401  # not a valid token
    with connect(f"{ws}/ws/telemetry?token={admin_token}", open_timeout=10) as accepted:
        accepted.recv(timeout=10)
    messages = [r.getMessage() for r in logs.records]
    assert any("/api/jobs?limit=5&token=[redacted]" in m for m in messages), messages
    assert any("WebSocket /ws/telemetry" in m for m in messages), messages
    assert not [m for m in messages if SECRET in m or admin_token in m]
    assert [r.getMessage() for r in logs.records if r.levelno >= logging.ERROR] == []


def test_redact_keeps_the_rest_of_the_query() -> None:
    assert redact("GET /a?x=1&token=abc&y=2") == "GET /a?x=1&token=[redacted]&y=2"
    assert redact("/ws?token=abc") == "/ws?token=[redacted]"
    assert redact("/ws?mytoken=abc") == "/ws?mytoken=abc"
