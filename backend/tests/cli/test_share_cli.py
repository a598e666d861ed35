"""Sharing a device by memory from the CLI (docs/sharing.md): `gpudeck submit --share` and
`gpudeck sweep submit --share` send share "memory"; `gpudeck show` prints the share and the
reservation; `gpudeck gpus` prints each device's reservations by job and the room left. The
real `gpudeck` command against a live API, no worker: the jobs hold their shares, placed."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cli_harness import Cli
from harness import TEST_NODE, auth_headers, live_server, register_devices
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.core.config import Settings, get_settings

GiB = 1024**3


@pytest.fixture
def share_cli(
    cli_settings: Settings,
    db: Session,
    admin_token: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Cli]:
    """The CLI as admin against a live API with a code root (script jobs) on 2 x 8 GiB."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    register_devices(db, "2x8GiB")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("GPUDECK_SCRIPT_CODE_ROOTS", str(code))  # the script kind reads it
    # ... through get_settings(), cached: another test of this process may have read it first.
    get_settings.cache_clear()
    try:
        with live_server(cli_settings) as url:
            yield Cli(url, admin_token, home)
    finally:
        get_settings.cache_clear()


def script_config(memory_gib: int) -> str:
    return json.dumps({"entrypoint": "train.py", "memory_per_device_bytes": memory_gib * GiB})


def job_id(out: str) -> int:
    found = re.search(r"job (\d+)", out)
    assert found, out
    return int(found.group(1))


def allow_sharing(db: Session) -> None:
    db.execute(text("UPDATE nodes SET share_memory = true WHERE name = :n"), {"n": TEST_NODE})
    db.commit()


def test_submit_share_show_and_gpus_say_what_each_job_reserves(share_cli: Cli, db: Session) -> None:
    refused = share_cli("submit", "script", "--config", script_config(3), "--share")
    assert refused.returncode == 1 and "422 share:" in refused.stderr  # sharing is off
    allow_sharing(db)
    first = job_id(share_cli("submit", "script", "--config", script_config(3), "--share").stdout)
    second = job_id(share_cli("submit", "script", "--config", script_config(2), "--share").stdout)

    shown = share_cli("show", str(first))
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"share\s+memory: reserves 3\.5 GiB per device", shown.stdout)

    listing = share_cli("gpus")
    assert listing.returncode == 0, listing.stderr
    device0 = next(line for line in listing.stdout.splitlines() if " 0 " in line)
    # both on device 0 (best fit), 7.5 - 3.5 - 2.5 GiB left
    assert f"job {first} (admin) 3.5 GiB, job {second} (admin) 2.5 GiB; 1.5 GiB free" in device0
    assert "yes" in device0  # the node allows sharing


def test_sweep_submit_share_makes_every_member_share(
    share_cli: Cli, db: Session, admin_token: str
) -> None:
    allow_sharing(db)
    submitted = share_cli(
        "sweep", "submit", "script", "--config", script_config(1),
        "--grid", f"memory_per_device_bytes={GiB},{2 * GiB}", "--share", "--json",
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    sweep = json.loads(submitted.stdout)
    members = httpx.get(
        f"{share_cli.url}/api/jobs",
        params={"limit": 10},
        headers=auth_headers(admin_token),
    ).json()["items"]
    mine = [m for m in members if m.get("sweep_id") == sweep["id"]]
    assert sorted((m["share"], m["reserved_bytes_per_device"]) for m in mine) == [
        ("memory", GiB + 500 * 1024**2),
        ("memory", 2 * GiB + 500 * 1024**2),
    ]
