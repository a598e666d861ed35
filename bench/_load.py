"""A lean HTTP/1.1 load generator for the bench scripts: each client is one keep-alive
connection (asyncio streams) sending one prepared request at a time. Not a benchmark itself.

Why not httpx: with 200 connections its pool costs the client about 8 ms of CPU a request
(measured: the bench process used 56 % of a core at 70 submits/s), and on a 2-core machine
the load generator then competes with the server it measures. Here a request costs the
client tens of microseconds, so the figures are the server's."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass
class LoadResult:
    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    first_error: str | None = None


def _request(method: str, host: str, path: str, headers: dict[str, str], body: bytes) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if body:
        lines.append("Content-Type: application/json")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split(" ", 2)[1])
    length = 0
    for line in header_lines:
        name, _, value = line.partition(":")
        if name.lower() == "content-length":
            length = int(value)
        elif name.lower() == "transfer-encoding":
            raise RuntimeError("chunked responses are not supported by this load generator")
    return status, await reader.readexactly(length)


async def run_load(
    url: str,
    path: str,
    *,
    clients: int,
    seconds: float,
    headers: dict[str, str] | None = None,
    body: dict | None = None,
    ok: tuple[int, ...] = (200, 201),
) -> LoadResult:
    """`clients` connections, each sending the request again as soon as it has its answer,
    for `seconds`. A status outside `ok` is counted, and the first such body kept."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    payload = json.dumps(body).encode() if body is not None else b""
    request = _request("POST" if body is not None else "GET", parts.netloc, path,
                       headers or {}, payload)  # fmt: skip
    result = LoadResult()
    deadline = time.monotonic() + seconds

    async def client() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while time.monotonic() < deadline:
                started = time.monotonic()
                writer.write(request)
                status, answer = await _read_response(reader)
                result.statuses[status] = result.statuses.get(status, 0) + 1
                if status in ok:
                    result.latencies.append(time.monotonic() - started)
                elif result.first_error is None:
                    result.first_error = f"{status}: {answer[:300]!r}"
        finally:
            writer.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    return result
