from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpudeck.core.config import GIB, Settings, SimulatedDeviceSpec


@pytest.mark.parametrize(
    ("text", "count", "size", "name"),
    [
        ("4x80GiB", 4, 80 * GIB, "Simulated 80GiB GPU"),
        ('2 x 24 GiB "Simulated L4"', 2, 24 * GIB, "Simulated L4"),
        ("1x512MiB", 1, 512 * 1024**2, "Simulated 0GiB GPU"),
    ],
)
def test_simulated_device_spec(text: str, count: int, size: int, name: str) -> None:
    spec = SimulatedDeviceSpec.parse(text)
    assert (spec.count, spec.memory_total_bytes, spec.name) == (count, size, name)


@pytest.mark.parametrize(
    ("env", "field"),
    [
        ({"GPUDECK_SIMULATED_DEVICES": "lots"}, "simulated_devices"),
        ({"GPUDECK_SIMULATED_DEVICES": "0x80GiB"}, "simulated_devices"),
        ({"GPUDECK_PORT": "70000"}, "port"),
        ({"GPUDECK_DEVICE_PROVIDER": "rocm"}, "device_provider"),
        ({"GPUDECK_DATABASE_URL": "mysql://x"}, "database_url"),
        ({"GPUDECK_REDIS_URL": "http://x"}, "redis_url"),
        ({"GPUDECK_HEARTBEAT_LEASE_S": "1"}, ""),  # shorter than two heartbeats
    ],
)
def test_nonsense_is_refused_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], field: str
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ValidationError) as info:
        Settings()
    assert field in {str(e["loc"][0]) if e["loc"] else "" for e in info.value.errors()}


def test_defaults_bind_loopback_and_pick_devices_automatically() -> None:
    settings = Settings()
    assert settings.host == "127.0.0.1"
    assert settings.device_provider == "auto"


def test_database_url_gets_the_psycopg_driver() -> None:
    settings = Settings(database_url="postgresql://u@h/db")
    assert settings.sqlalchemy_url == "postgresql+psycopg://u@h/db"
