"""Tokens, principals and the network checks (Host, Origin, bind address). Pure functions only.

Tokens are `gpd_` + 32 random bytes (url-safe base64). They are stored as SHA-256 digests: with
256 bits of entropy nobody can guess a token from its digest, so a slow password hash (bcrypt,
argon2) would buy nothing and cost every request tens of milliseconds.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

Role = Literal["user", "admin"]
TOKEN_PREFIX = "gpd_"
# 32 bytes in url-safe base64 without padding are 43 characters.
_TOKEN_RE = re.compile(r"^gpd_[A-Za-z0-9_-]{43}$")
DISPLAY_PREFIX_CHARS = 10  # "gpd_" + 6: enough to tell tokens apart in a list, useless to guess
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")


@dataclass(frozen=True)
class Principal:
    """Who is making a request: a user signed in with one of their tokens."""

    name: str
    role: Role
    user_id: int | None = None
    token_id: int | None = None
    run_code: bool = False  # may submit jobs that run their own code (script)

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    def may_manage(self, owner: str) -> bool:
        """Cancel, resume, download: the owner of a job, or an admin."""
        return self.is_admin or self.name == owner


# With GPUDECK_AUTH=off (loopback only) every request acts as this admin.
LOCAL_ADMIN = Principal(name="local", role="admin")


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_matches(token: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_token(token), stored_hash)


def looks_like_token(value: str) -> bool:
    """A cheap shape check, so garbage never reaches the database."""
    return bool(_TOKEN_RE.match(value))


def is_loopback(host: str) -> bool:
    name = host.strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def split_host(value: str) -> tuple[str, int | None]:
    """`name`, `name:port`, `[v6]` or `[v6]:port` -> (lower-case name, port or None)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, None
        name, rest = value[: end + 1], value[end + 1 :]
    else:
        name, _, rest = value.partition(":")
        rest = ":" + rest if rest else ""
    if not rest:
        return name, None
    port = rest[1:]
    valid = rest.startswith(":") and port.isascii() and port.isdigit() and len(port) <= 5
    return (name, int(port)) if valid else (value, -1)


def allowed_hosts(bind_host: str, extra: Collection[str]) -> frozenset[str]:
    """Loopback names (any port), the bind address when it is a specific one, and `extra`.

    An entry is `name` (any port) or `name:port`."""
    hosts = {*LOOPBACK_HOSTS, *(h.strip().lower() for h in extra if h.strip())}
    if bind_host not in ("0.0.0.0", "::", ""):
        hosts.add(f"[{bind_host}]" if ":" in bind_host else bind_host.lower())
    return frozenset(hosts)


def host_allowed(host_header: str, allowed: Collection[str]) -> bool:
    """The Host header names us: a DNS-rebound page sends its own name and fails this."""
    name, port = split_host(host_header)
    if not name or port == -1:
        return False
    return name in allowed or (port is not None and f"{name}:{port}" in allowed)


def origin_allowed(origin: str, host_header: str, allowed_origins: Collection[str]) -> bool:
    """Same-origin (the Origin names the Host we accepted), or explicitly allowed."""
    if origin.rstrip("/").lower() in allowed_origins:
        return True
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False  # includes the opaque "null" origin of sandboxed frames and file://
    return parts.netloc.lower() == host_header.strip().lower()


def parse_list(value: str) -> list[str]:
    """A comma-separated setting."""
    return [item.strip() for item in value.split(",") if item.strip()]
