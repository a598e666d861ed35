"""Refuse request bodies over a size limit before they are read into memory."""

from __future__ import annotations

import json
from collections.abc import Mapping

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyLimitMiddleware:
    """Checks Content-Length up front and counts streamed chunks too (chunked uploads have none)."""

    def __init__(
        self, app: ASGIApp, max_bytes: int, overrides: Mapping[str, int] | None = None
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.overrides = dict(overrides or {})  # path -> limit (streamed uploads)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.overrides.get(scope["path"], self.max_bytes)
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await self._refuse(send, limit)
            return
        received = 0
        response_started = refused = False

        async def counting_receive() -> Message:
            # Over the limit, the 413 goes out at once and the app is told the client left:
            # raising here instead let FastAPI's body parser turn it into a 400.
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    refused = True
                    if not response_started:
                        await self._refuse(send, limit)
                    return {"type": "http.disconnect"}
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal response_started
            if refused:
                return  # the 413 is the response
            response_started = response_started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except Exception:
            if not refused:
                raise
            # The app failed on the disconnect it was handed; the 413 has been sent.

    async def _refuse(self, send: Send, limit: int) -> None:
        body = json.dumps(
            {
                "detail": [
                    {
                        "loc": ["body"],
                        "msg": f"request body exceeds the limit of {limit} bytes",
                        "type": "body_too_large",
                    }
                ]
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
