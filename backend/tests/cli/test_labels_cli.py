"""`gpudeck tag`, `gpudeck jobs --tag/--search` and `gpudeck compare`: the real command against
a real API, agreeing with what the API answers (the dashboard's filter reads the same list)."""

from __future__ import annotations

import json

from cli_harness import Cli
from harness import make_job
from sqlalchemy.orm import Session

from gpudeck.cli.compare import differing
from gpudeck.models import JobStatus


def test_tag_then_find_and_compare(cli: Cli, db: Session) -> None:
    small = make_job(db, devices=[0], config={"steps": 10, "batch_size": 64, "lr": 1e-3})
    big = make_job(db, devices=[1], config={"steps": 10, "batch_size": 64, "lr": 3e-3})
    big.latest_metrics, big.status = {"overall_loss": 0.125}, JobStatus.succeeded
    db.commit()

    tagged = cli("tag", str(small.id), "baseline", "lr-sweep", "--note", "first try")
    assert tagged.returncode == 0, tagged.stderr
    assert f"job {small.id} tags: baseline, lr-sweep" in tagged.stdout
    assert "notes: first try" in tagged.stdout
    untagged = cli("tag", str(small.id), "--remove", "lr-sweep", "--json")
    assert json.loads(untagged.stdout) == {
        "id": small.id,
        "tags": ["baseline"],
        "notes": "first try",
    }

    found = json.loads(cli("jobs", "--tag", "baseline", "--json").stdout)
    assert [j["id"] for j in found["items"]] == [small.id]
    assert json.loads(cli("jobs", "-q", "FIRST", "--json").stdout)["total"] == 1  # the notes

    refused = cli("tag", str(small.id), "two words")
    assert refused.returncode == 1 and "add_tags" in refused.stderr, refused.stderr

    compared = cli("compare", str(big.id), str(small.id), "--json")
    assert compared.returncode == 0, compared.stderr
    result = json.loads(compared.stdout)
    assert result["jobs"] == [big.id, small.id]  # in the order asked
    assert ["lr", ["0.003", "0.001"]] in result["differing"]
    assert all(path != "steps" for path, _ in result["differing"])  # alike: not listed
    assert ["loss", ["0.125", "-"]] in result["figures"]  # the kind's label
    table = cli("compare", str(big.id), str(small.id)).stdout
    assert "baseline" in table and "config fields differ" in table
    assert cli("compare", str(big.id)).returncode == 2  # two jobs at least


def test_differing_lists_only_fields_not_alike() -> None:
    configs = [
        {"lr": 1e-3, "data": {"type": "synthetic", "n": 3}, "tags": [1, 2]},
        {"lr": 1e-3, "data": {"type": "hf", "n": 3}, "tags": [1, 2], "seed": 7},
    ]
    assert differing(configs) == [("data.type", ['"synthetic"', '"hf"']), ("seed", ["-", "7"])]
    assert differing([configs[0], configs[0]]) == []
