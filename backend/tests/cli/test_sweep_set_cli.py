"""`gpudeck sweep set ID --max-parallel N`: the real command against a live API (no scheduler,
so the members wait). It prints the new value, which the API then gives; a bad value or another
user's sweep exits 1 with the API's reason and changes nothing."""

from __future__ import annotations

import json

from cli_harness import Cli
from harness import create_token
from sqlalchemy.orm import Session, sessionmaker

SAE = json.dumps({"d_in": 16, "d_sae": 64, "batch_size": 64, "steps": 10})


def _sweep(cli: Cli) -> str:
    started = cli(
        "sweep", "submit", "sae", "--config", SAE, "--grid", "k=2,4,8", "--max-parallel", "1"
    )
    assert started.returncode == 0, started.stderr
    return started.stdout.split()[1]


def _max_parallel(cli: Cli, sweep_id: str) -> int:
    return int(json.loads(cli("sweep", "show", sweep_id, "--json").stdout)["max_parallel"])


def test_set_changes_max_parallel_and_prints_the_new_value(cli: Cli) -> None:
    sweep_id = _sweep(cli)
    changed = cli("sweep", "set", sweep_id, "--max-parallel", "3")
    assert changed.returncode == 0, changed.stderr
    assert f"sweep {sweep_id}: max_parallel 3 (at most 3 members at once)" in changed.stdout
    assert _max_parallel(cli, sweep_id) == 3


def test_a_bad_value_or_another_users_sweep_exits_1_and_changes_nothing(
    cli: Cli, session_factory: sessionmaker[Session]
) -> None:
    sweep_id = _sweep(cli)
    refused = cli("sweep", "set", sweep_id, "--max-parallel", "0")
    assert refused.returncode == 1 and "max_parallel" in refused.stderr, refused.stderr
    alice = create_token(session_factory, "user", name="alice")
    forbidden = cli("sweep", "set", sweep_id, "--max-parallel", "2", token=alice)
    assert forbidden.returncode == 1, forbidden.stderr
    assert f"sweep {sweep_id} belongs to admin" in forbidden.stderr, forbidden.stderr
    assert _max_parallel(cli, sweep_id) == 1
