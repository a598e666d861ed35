"""docker-compose.yml must be valid for users who have a Docker engine (none runs here)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]


def compose_config() -> dict:
    """`docker compose config` where the plugin exists, else Debian's docker-compose; both
    validate the file against the compose schema without talking to an engine."""
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        command = ["docker", "compose"]
    else:
        assert shutil.which("docker-compose"), "make test installs docker-compose"
        command = ["docker-compose"]
    result = subprocess.run(
        [*command, "-f", str(ROOT / "docker-compose.yml"), "config"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def test_compose_file_is_valid_and_complete() -> None:
    config = compose_config()
    services = config["services"]
    assert {"postgres", "redis", "api", "scheduler", "worker", "sampler"} <= services.keys()
    devices = services["worker"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]
    for name in ("api", "scheduler", "worker", "sampler"):
        assert services[name]["restart"] == "unless-stopped"  # a crashed part comes back
        env = services[name]["environment"]
        assert env["GPUDECK_DATABASE_URL"].startswith("postgresql+psycopg://")
        assert env["GPUDECK_REDIS_URL"].startswith("redis://")
    # Published on loopback only: exposing the API is a deliberate act.
    assert all(str(p).startswith("127.0.0.1:") or p.get("host_ip") == "127.0.0.1"
               for p in services["api"]["ports"])  # fmt: skip


def test_the_node_profile_joins_a_machine_on_the_hosts_network() -> None:
    node = compose_config()["services"]["node"]
    assert node["profiles"] == ["node"]  # not started by a plain `docker compose up`
    assert node["command"] == ["gpudeck", "node"]
    assert node["network_mode"] == "host"  # ranks on other machines reach this one's ranks
    env = node["environment"]
    assert {"GPUDECK_NODE_NAME", "GPUDECK_NODE_ADDRESS", "GPUDECK_NODE_TOKEN"} <= env.keys()
