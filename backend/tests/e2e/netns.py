"""Nodes as separate hosts on one machine: a network namespace per node on one bridge, and a
TCP forwarder that lets them reach the test's Postgres and Redis (which listen on loopback).

    root namespace: bridge 10.231.N.1 -- forwarder -> Postgres, Redis (TCP or Unix socket)
    node k:         namespace with eth0 = 10.231.N.(2 + k), its own loopback

Needs root (CAP_NET_ADMIN); `available()` says why not where it is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

# One lock file a /24 in use, held for its bridge's life: test processes running side by side
# (xdist workers, a developer's second run) never put two bridges on one subnet. Two did when the
# subnet came from the pid alone (pid % 200): the kernel then routes the subnet to one of the two
# bridges, and the other cluster's nodes cannot reach their controller ("Unable to register").
LOCKS = Path("/run/gpudeck-test-subnets")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


def available() -> str | None:
    """None when namespaces can be made here, else the reason they cannot."""
    probe = f"gdprobe{os.getpid()}"
    try:
        _ip("netns", "add", probe)
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", b"") or str(exc).encode()
        return f"network namespaces are not permitted here: {detail.decode().strip()}"
    _ip("netns", "del", probe)
    return None


def _subnet_in_use(prefix: str) -> bool:
    """An address of `prefix`.0/24 on any interface: a bridge a killed run left behind."""
    listed = subprocess.run(
        ["ip", "-o", "addr", "show", "to", f"{prefix}.0/24"],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    return bool(listed.stdout.strip())


def claim_subnet(network: str) -> tuple[str, IO[str]]:
    """A free `network`.N (a /24 prefix) and the open lock file that keeps it ours until closed."""
    LOCKS.mkdir(exist_ok=True)
    start = os.getpid() % 200
    for step in range(200):
        prefix = f"{network}.{20 + (start + step) % 200}"
        lock = (LOCKS / f"{prefix}.lock").open("w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        if not _subnet_in_use(prefix):
            return prefix, lock
        lock.close()
    raise RuntimeError(f"no free /24 under {network}.20-219 for a test bridge")


@dataclass
class Hosts:
    """A bridge and one namespace per node name; `address[name]` is that node's address.
    The subnet, `network`.N.0/24, is claimed when the bridge comes up."""

    names: list[str]
    network: str = "10.231"
    tag: str = field(default_factory=lambda: f"gd{os.getpid() % 100000}")
    address: dict[str, str] = field(default_factory=dict)
    namespace: dict[str, str] = field(default_factory=dict)
    prefix: str = ""
    _lock: IO[str] | None = None

    @property
    def bridge(self) -> str:
        return f"{self.tag}br"

    @property
    def gateway(self) -> str:
        return f"{self.prefix}.1"

    def up(self) -> None:
        self.prefix, self._lock = claim_subnet(self.network)
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for k, name in enumerate(self.names):
            ns, host_end, node_end = f"{self.tag}n{k}", f"{self.tag}h{k}", f"{self.tag}v{k}"
            _ip("netns", "add", ns)
            self.namespace[name] = ns
            _ip("link", "add", host_end, "type", "veth", "peer", "name", node_end)
            _ip("link", "set", host_end, "master", self.bridge)
            _ip("link", "set", host_end, "up")
            _ip("link", "set", node_end, "netns", ns)
            _ip("-n", ns, "link", "set", node_end, "name", "eth0")
            self.address[name] = f"{self.prefix}.{2 + k}"
            _ip("-n", ns, "addr", "add", f"{self.address[name]}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")

    def down(self) -> None:
        for ns in self.namespace.values():
            with contextlib.suppress(subprocess.CalledProcessError):
                _ip("netns", "del", ns)  # takes its veth pair with it
        with contextlib.suppress(subprocess.CalledProcessError):
            _ip("link", "del", self.bridge)
        if self._lock is not None:  # the bridge is gone: its subnet is free for the next one
            self._lock.close()
            self._lock = None

    def command(self, name: str, argv: list[str]) -> list[str]:
        """`argv` run inside node `name`'s namespace."""
        return ["ip", "netns", "exec", self.namespace[name], *argv]


Target = tuple[str, int] | str


class Forwarder:
    """Listens on `host` and pipes each connection to a target: one listener per target."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def forward(self, target: Target) -> int:
        """A port on `host` that leads to `target`: (host, port), or a Unix socket's path."""

        async def connect() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            if isinstance(target, str):
                return await asyncio.open_unix_connection(target)
            return await asyncio.open_connection(*target)

        async def listen() -> int:
            async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                try:
                    up_reader, up_writer = await connect()
                except OSError:
                    writer.close()
                    return
                await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

            server = await asyncio.start_server(handle, self.host, 0)
            return int(server.sockets[0].getsockname()[1])

        return asyncio.run_coroutine_threadsafe(listen(), self.loop).result(10)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, OSError):
            writer.close()
