"""`gpudeck show` prints every config field with defaults marked and a sweep member's values
against its base; `gpudeck diff A B` prints exactly the fields that differ. The real command
against a live API (no worker: the jobs need not run)."""

from __future__ import annotations

import json
import re

import httpx
from cli_harness import Cli

from gpudeck.cli.job_settings import diff_rows, setting_rows, value_text

SAE = {"d_in": 16, "d_sae": 64, "batch_size": 64, "steps": 1500}


def _submit(cli: Cli, **config: object) -> int:
    done = cli("submit", "sae", "--config", json.dumps(SAE | config), "--count", "1")
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[1])  # "job 3 queued on ..."


def _lines(stdout: str) -> list[list[str]]:
    """Each line's words, the table's box-drawing characters (U+2500 to U+257F) left out."""
    box = {chr(c) for c in range(0x2500, 0x2580)}
    return [[w for w in line.split() if not set(w) <= box] for line in stdout.splitlines()]


def test_show_lists_every_field_and_diff_exactly_the_differing_ones(cli: Cli) -> None:
    a, b = _submit(cli, lr=0.01), _submit(cli, lr=0.02, k=8)
    shown = cli("show", str(a))
    assert shown.returncode == 0, shown.stderr
    lines = _lines(shown.stdout)
    assert ["lr", "0.01", "default", "0.004"] in lines, shown.stdout
    assert ["lr_warm_up_steps", "0.05", "→", "75", "steps", "(default)"] in lines
    assert ["dataset.num_features", "512", "(default)"] in lines
    # Its own five changes (lr and SAE's four), in the kind's order, not the database's.
    assert re.search(r"settings \(5 of \d+ differ from the sae defaults\)", shown.stdout)
    paths = [line[0] for line in lines[lines.index(["architecture", "topk", "(default)"]) :]]
    assert paths[:4] == ["architecture", "k", "d_in", "d_sae"], shown.stdout
    assert "member of sweep" not in shown.stdout

    differ = cli("diff", str(b), str(a))
    assert differ.returncode == 0, differ.stderr
    rows = [line for line in _lines(differ.stdout) if line and line[0] in ("k", "lr", "field")]
    assert rows == [["field", f"#{b}", f"#{a}"], ["k", "8", "5"], ["lr", "0.02", "0.01"]]
    assert re.search(r"^2 fields differ; \d+ the same$", differ.stdout, re.M), differ.stdout
    as_json = json.loads(cli("diff", str(a), str(b), "--json").stdout)
    assert [f["path"] for f in as_json["fields"]] == ["k", "lr"]

    one = cli("diff", str(a))
    assert one.returncode == 2 and "give 2 to 20 job ids" in one.stderr
    missing = cli("diff", str(a), "999999")
    assert missing.returncode == 1 and "job 999999 does not exist" in missing.stderr


def test_show_names_what_a_sweep_member_sets_against_its_base(cli: Cli) -> None:
    body = {
        "job": {"kind": "sae", "config": SAE | {"lr": 0.004}, "count": 1},
        "parameters": {"grid": {"lr": [0.0032802640616790657]}},
    }
    headers = {"Authorization": f"Bearer {cli.token}"}
    created = httpx.post(f"{cli.url}/api/sweeps", json=body, headers=headers, timeout=60)
    assert created.status_code == 201, created.text
    member = created.json()["members"][0]["job_id"]
    shown = cli("show", str(member)).stdout
    sweep = created.json()["id"]
    assert f"member of sweep #{sweep}: lr 0.00328026 (base 0.004)" in shown, shown


def test_values_read_as_on_the_job_page() -> None:
    assert [value_text(v) for v in (None, True, 3, 0.0032802640616790657, "topk", [1, 2])] == [
        "empty", "true", "3", "0.00328026", "topk", "[1, 2]",
    ]  # fmt: skip
    settings = {
        "settings": [
            {"path": "k", "value": 5, "default": 5, "has_default": True, "is_default": True,
             "note": ""},
            {"path": "lr_warm_up_steps", "value": 0.1, "default": 0.05, "has_default": True,
             "is_default": False, "note": "150 steps"},
            {"path": "dataset.path", "value": "a.npy", "default": None, "has_default": False,
             "is_default": False, "note": ""},
        ]
    }  # fmt: skip
    assert setting_rows(settings) == [
        ("k", "5", "(default)"),
        ("lr_warm_up_steps", "0.1 → 150 steps", "default 0.05"),
        ("dataset.path", "a.npy", "required"),
    ]
    answer = {"fields": [{"path": "dataset.path", "values": ["a.npy", None],
                          "present": [True, False]}]}  # fmt: skip
    assert diff_rows(answer) == [("dataset.path", ["a.npy", "-"])]
