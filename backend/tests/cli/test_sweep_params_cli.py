"""`gpudeck sweep submit --random/--draws/--seed` and `--zip`: the options as the API reads them.
The command runs in-process (typer's runner) against the in-process API (its TestClient): no
server, worker or scheduler, so the members are created and wait."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner, Result

from gpudeck.cli import app
from gpudeck.cli.sweep_params import split_values

SAE = json.dumps(
    {
        "d_in": 16, "d_sae": 64, "batch_size": 64, "steps": 10,
        "dataset": {"type": "synthetic", "num_features": 32, "active_features": 3},
    }
)  # fmt: skip


@pytest.fixture
def submit(
    client: TestClient, devices: str, admin_token: str, monkeypatch: pytest.MonkeyPatch
) -> Any:
    """`gpudeck sweep submit sae --config SAE --json ARGS...`, its requests sent to `client`."""

    def through_client(method: str, url: str, **kwargs: Any) -> httpx.Response:
        kwargs.pop("timeout", None)  # the TestClient takes none
        kwargs.pop("verify", None)  # nor TLS settings: it opens no connection
        return client.request(method, url, **kwargs)

    monkeypatch.setattr("gpudeck.cli.http.httpx.request", through_client)
    monkeypatch.setenv("GPUDECK_URL", "http://testserver")
    monkeypatch.setenv("GPUDECK_TOKEN", admin_token)

    def run(*args: str) -> Result:
        argv = ["sweep", "submit", "sae", "--config", SAE, "--json", *args]
        return CliRunner().invoke(app, argv)

    return run


def params(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    return [m["params"] for m in json.loads(result.stdout)["members"]]


def test_random_draws_are_seeded_within_bounds_and_crossed_with_the_grid(submit: Any) -> None:
    drawn = params(
        submit(
            "--random", "lr=log_uniform:1e-4:1e-2", "--random", "k=int:4:16",
            "--random", "architecture=choice:topk,batchtopk", "--grid", "batch_size=32,64",
            "--draws", "3", "--seed", "7",
        )
    )  # fmt: skip
    assert len(drawn) == 6 and [m["batch_size"] for m in drawn] == [32] * 3 + [64] * 3
    assert all(1e-4 <= m["lr"] <= 1e-2 for m in drawn)
    assert all(isinstance(m["k"], int) and 4 <= m["k"] <= 16 for m in drawn)
    assert {m["architecture"] for m in drawn} <= {"topk", "batchtopk"}
    again = params(submit("--random", "lr=uniform:0.001:0.002", "--draws", "2", "--seed", "7"))
    same = params(submit("--random", "lr=uniform:0.001:0.002", "--draws", "2", "--seed", "7"))
    assert again == same and again[0] != again[1]  # one seed, one draw; two draws differ


def test_zip_lists_advance_together_with_dotted_paths(submit: Any) -> None:
    stepped = params(
        submit(
            "--zip", "d_in=16,32", "--zip", "d_sae=64,128",
            "--zip", "dataset.num_features=48,64",
        )
    )  # fmt: skip
    assert stepped == [
        {"d_in": 16, "d_sae": 64, "dataset.num_features": 48},
        {"d_in": 32, "d_sae": 128, "dataset.num_features": 64},
    ]


def test_a_json_list_or_object_is_one_value() -> None:
    assert split_values('8,[1,2],{"a":1,"b":2},"x,y",topk') == [
        "8", "[1,2]", '{"a":1,"b":2}', '"x,y"', "topk",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--zip", "k=8,16,32", "--zip", "d_sae=1024,2048"],
         "--zip lists are advanced together, so they need one length: k has 3, d_sae has 2"),
        (["--random", "lr=normal:0:1", "--draws", "2"], "--random takes path=uniform|"),
        (["--random", "lr=uniform:0.1", "--draws", "2"], "--random takes path=uniform|"),
        (["--random", "lr=uniform:a:1", "--draws", "2"], "--random bounds are numbers: not 'a'"),
        (["--random", "lr=uniform:0:1"], "--random needs --draws N"),
        (["--grid", "k=8,16", "--draws", "2"], "--draws goes with --random"),
        (["--grid", "k=8,16", "--seed", "2"], "--seed goes with --random"),
    ],
)  # fmt: skip
def test_a_mistake_in_the_options_is_one_line_and_exit_2(
    submit: Any, args: list[str], line: str
) -> None:
    refused = submit(*args)
    assert refused.exit_code == 2, refused.output
    assert refused.output.strip().startswith(line), refused.output
    assert len(refused.output.strip().splitlines()) == 1, refused.output


def test_the_api_refuses_what_the_options_cannot_know(submit: Any) -> None:
    refused = submit("--random", "lr=log_uniform:0:1", "--draws", "2")
    assert refused.exit_code == 1 and "log_uniform needs low above 0" in refused.output


def test_preview_prints_the_draws_the_sweep_would_make_and_submits_nothing(
    submit: Any, client: TestClient
) -> None:
    args = ("--random", "lr=log_uniform:1e-4:1e-2", "--grid", "k=8,16", "--draws", "2")
    shown = submit(*args, "--preview")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["count"] == 4
    assert client.get("/api/sweeps").json() == []  # nothing created
    created = params(submit(*args))
    assert json.loads(shown.stdout)["members"] == created  # the very draws
    table = CliRunner().invoke(app, ["sweep", "submit", "sae", "--config", SAE, *args, "--preview"])
    assert table.exit_code == 0 and "4 members (nothing submitted)" in table.stdout
    assert f"{created[0]['lr']:.3g}" in table.stdout


def test_the_sweeps_list_says_what_each_sweep_swept(submit: Any) -> None:
    created = submit(
        "--grid",
        "k=8,16,32",
        "--random",
        "lr=log_uniform:0.0001:0.0032802640616790657",
        "--draws",
        "2",
    )
    assert created.exit_code == 0, created.output
    listed = CliRunner().invoke(app, ["sweeps"], env={"COLUMNS": "120"})
    assert listed.exit_code == 0, listed.output
    row = next(line for line in listed.stdout.splitlines() if "k 8, 16, 32" in line)
    assert "│ sae " in row and "6 queued" in row
    assert "lr 0.0001 to 0.00328 log-uniform" in listed.stdout  # the range, 3 figures
    as_json = json.loads(CliRunner().invoke(app, ["sweeps", "--json"]).stdout)
    assert [p["path"] for p in as_json[0]["swept"]] == ["k", "lr"]
