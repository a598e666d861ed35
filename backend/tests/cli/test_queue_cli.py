"""The queue from a terminal: the real `gpudeck` CLI (a subprocess) against a real API server on
the test database. Devices are held by a job no worker runs, so what is submitted after it waits."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from harness import TEST_NODE, create_token, live_server, register_devices
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings

SMALL = json.dumps({"batch_size": 64, "steps": 5})
LONG_NAME = "sweep-lr3e-4-l1coef5e-3-dsae16384-expansion32-seed7-" + "x" * 20


@dataclass
class Cli:
    url: str
    token: str

    def run(self, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUDECK_")}
        env |= {
            "GPUDECK_URL": self.url,
            "GPUDECK_TOKEN": token or self.token,
            "COLUMNS": "80",
            "NO_COLOR": "1",
        }
        return subprocess.run(
            [sys.executable, "-m", "gpudeck", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def json(self, *args: str, token: str | None = None) -> Any:
        done = self.run(*args, "--json", token=token)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def submit(self, *args: str, token: str | None = None) -> dict[str, Any]:
        job: dict[str, Any] = self.json("submit", "sae", "--config", SMALL, *args, token=token)
        return job


@pytest.fixture
def cli(settings: Settings, devices: str, admin_token: str) -> Iterator[Cli]:
    with live_server(settings) as url:
        yield Cli(url, admin_token)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr  # one clear line, no traceback
    return lines[0]


def test_a_job_on_busy_devices_waits_with_its_reason_and_can_be_held(cli: Cli) -> None:
    holder = cli.submit("--gpus", "0", "--node", TEST_NODE)
    assert holder["devices"], holder  # it got device 0

    said = cli.run("submit", "sae", "--config", SMALL, "--gpus", "0", "--node", TEST_NODE,
                   "--name", LONG_NAME)  # fmt: skip
    assert said.returncode == 0, said.stderr
    line = " ".join(said.stdout.split())
    assert "queued at position 1: devices busy" in line, said.stdout
    assert f"held by job {holder['id']}" in line  # who holds what it waits for

    page = cli.json("queue")
    [waiting] = page["items"]
    assert waiting["name"] == LONG_NAME and waiting["status"] == "queued"
    assert waiting["queue"]["position"] == 1
    assert waiting["queue"]["reason_code"] == "devices_busy"

    table = cli.run("queue")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, table.stdout
    # the long name is folded over lines, never cut: every piece of it is there, in order
    assert _pieces_in_order(LONG_NAME, lines), table.stdout
    assert "devices busy" in " ".join(" ".join(line.split()) for line in lines)
    assert "1 waiting" in table.stdout

    held = cli.run("hold", str(waiting["id"]))
    assert held.returncode == 0, held.stderr
    assert f"job {waiting['id']} held" in held.stdout
    assert cli.json("queue")["items"][0]["queue"]["reason_code"] == "held"

    released = cli.run("release", str(waiting["id"]))
    assert f"job {waiting['id']} released" in released.stdout
    assert cli.json("queue")["items"][0]["held"] is False


def _pieces_in_order(name: str, lines: list[str]) -> bool:
    """Whether `name`, folded into a column, reads whole: its cells' pieces, joined, contain it."""
    for start, line in enumerate(lines):
        if name[:8] not in line:
            continue
        column = line.index(name[:8])
        text = ""
        for following in lines[start:]:
            piece = following[column:].split(" ")[0] if len(following) > column else ""
            if not piece:
                break
            text += piece
            if name in text:
                return True
    return False


def test_submit_options_reach_the_job(cli: Cli) -> None:
    first = cli.submit("--gpus", "1", "--node", TEST_NODE)
    job = cli.submit(
        "--gpus", "1", "--node", TEST_NODE, "--priority", "-5", "--time-limit", "2h",
        "--depends-on", str(first["id"]), "--preemptible", "--hold",
    )  # fmt: skip
    assert job["priority"] == -5
    assert job["time_limit_s"] == 7200
    assert job["depends_on"] == [first["id"]]
    assert job["preemptible"] is True
    assert job["held"] is True
    assert job["status"] == "queued"

    changed = cli.run("priority", str(job["id"]), "-20")  # a negative value is not an option
    assert changed.returncode == 0, changed.stderr
    assert f"job {job['id']} priority -20" in changed.stdout


def test_no_queue_refuses_busy_devices_in_one_line(cli: Cli) -> None:
    cli.submit("--gpus", "2", "--node", TEST_NODE)
    line = one_line_error(cli.run("submit", "sae", "--config", SMALL, "--gpus", "2",
                                  "--node", TEST_NODE, "--no-queue"))  # fmt: skip
    assert line.startswith("409 ")
    assert cli.json("queue")["items"] == []  # nothing was queued


def test_bad_scheduling_input_is_named(cli: Cli, session_factory: sessionmaker[Session]) -> None:
    line = one_line_error(cli.run("submit", "sae", "--config", SMALL, "--depends-on", "999999"))
    assert "depends_on" in line and "999999" in line

    bad = cli.run("submit", "sae", "--config", SMALL, "--time-limit", "2 hours")
    assert bad.returncode == 2
    said = " ".join(re.sub(r"[│╭╮╰╯─]", " ", bad.stderr).split())  # out of click's box
    assert "Invalid value for '--time-limit': '2 hours' is not a duration" in said
    assert "use e.g. 90s, 30m, 2h or 1d" in said

    user_token = create_token(session_factory, "user", name="bob")
    line = one_line_error(
        cli.run("submit", "sae", "--config", SMALL, "--priority", "5", token=user_token)
    )
    assert line.startswith("403 priority:")

    cli.submit("--gpus", "3", "--node", TEST_NODE)
    mine = cli.submit("--gpus", "3", "--node", TEST_NODE, token=user_token)
    line = one_line_error(cli.run("priority", str(mine["id"]), "10", token=user_token))
    assert "priority" in line
    done = cli.run("priority", str(mine["id"]), "-3", token=user_token)  # lowering is allowed
    assert done.returncode == 0, done.stderr

    line = one_line_error(cli.run("hold", "999999"))
    assert line.startswith("404 ")


def test_a_count_spread_over_nodes_from_the_cli(cli: Cli, db: Session) -> None:
    register_devices(db, "2x80GiB", node="alpha")
    job = cli.submit("--count", "4", "--devices-per-node", "2")
    # Exactly 2 x 2: the best fit takes alpha's two first, then two of the test node's eight.
    assert [d["node"] for d in job["devices"]] == ["alpha", "alpha", TEST_NODE, TEST_NODE]
    assert job["devices_per_node"] == 2
    bad = cli.run("submit", "sae", "--config", SMALL, "--count", "4", "--nodes", "3")
    assert bad.returncode != 0 and "nodes" in bad.stderr + bad.stdout
