"""What uvicorn logs about requests: never a token, and a refused handshake is not an error.

uvicorn writes the path with its query string to the access log (and, for WebSockets, to
`uvicorn.error`), so `?token=` would be logged whenever a request carries one: refused by the
Host/Origin check before the token is read, or on a plain HTTP request, where the query form is
not honoured. After the security middleware refuses a WebSocket handshake with an HTTP
response, uvicorn logs "ASGI callable returned without completing handshake." at ERROR; the
refusal is already logged at INFO, so that record is lowered to INFO too.
"""

from __future__ import annotations

import logging
import re
from contextvars import ContextVar

UVICORN_LOGGERS = ("uvicorn.access", "uvicorn.error")
_TOKEN = re.compile(r"((?:[?&]|%3F|%26)token=)[^&\s\"']*", re.IGNORECASE)
_NO_HANDSHAKE = "ASGI callable returned without completing handshake"
# Set in the connection's task by the security middleware when it refuses a WebSocket.
websocket_refused: ContextVar[bool] = ContextVar("websocket_refused", default=False)


def redact(text: str) -> str:
    return _TOKEN.sub(r"\1[redacted]", text)


class RedactTokens(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        return True


class RefusalIsInfo(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if (
            record.levelno >= logging.ERROR
            and str(record.msg).startswith(_NO_HANDSHAKE)
            and websocket_refused.get()
        ):
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def install_log_filters() -> None:
    """On uvicorn's loggers (idempotent); called at startup, after uvicorn configured them."""
    for name in UVICORN_LOGGERS:
        logger = logging.getLogger(name)
        for kind in (RedactTokens, RefusalIsInfo):
            if not any(isinstance(f, kind) for f in logger.filters):
                logger.addFilter(kind())
