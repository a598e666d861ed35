"""The `map` kind on real ranks (gloo, one process each): a user's function over an array and
over JSONL records gives the output computed in the test, in input order, with every strategy;
a function that raises fails its rank with the traceback in the rank's log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rankrunner import make_spec, read_events, run_ranks

from gpudeck.engine.events import decode
from gpudeck.engine.map import output
from gpudeck.services.jobs.map_ranks import summarize

KIND = ["gpudeck.kinds.map:KIND"]
STRATEGIES: dict[str, dict[str, Any]] = {
    "balanced": {},
    "memory": {"free_memory_bytes": [1 << 30, 3 << 30]},
    "sequential": {"max_items_per_device": 9},
    "round_robin": {},
    "dynamic": {},
}


def _data(tmp: Path, num: int) -> Path:
    data = tmp / "data"
    (data / "datasets").mkdir(parents=True)
    np.save(data / "datasets" / "x.npy", np.arange(num * 3, dtype=np.float32).reshape(num, 3))
    records = "".join(json.dumps({"n": n}) + "\n" for n in range(num))
    (data / "datasets" / "r.jsonl").write_text(records)
    return data


def _run(tmp: Path, data: Path, config: dict[str, Any], world: int, env: dict[str, str]) -> Any:
    name = config["output"].replace("/", "-")
    spec = make_spec(tmp / name, config, kind="map", data_dir=data)
    codes = run_ranks(spec, world, extra_kinds=KIND, timeout_s=120, env=env)
    assert codes == [0] * world, [p.read_text() for p in (tmp / name / "run").glob("*.traceback")]
    return spec


def test_every_strategy_merges_the_functions_output_in_input_order(
    tmp_path: Path, map_env: dict[str, str]
) -> None:
    num = 23  # chunks of 4: 6 chunks, the last of 3; batches of 3 cut across chunk ends
    data = _data(tmp_path, num)
    x = torch.arange(num * 3, dtype=torch.float64).reshape(num, 3)
    for strategy, extra in STRATEGIES.items():
        config = {
            "function": "userfns:affine",
            "input": "x.npy",
            "output": f"out/{strategy}",
            "kwargs": {"scale": 2.5},
            "map": {"strategy": strategy, "chunk_size": 4, "batch_size": 3, **extra},
        }
        spec = _run(tmp_path, data, config, 2, map_env)
        got = output.read_output(data / "datasets" / "out" / strategy)
        assert torch.equal(got["y"], x * 2.5 + 1), strategy
        chunk_ranks = {e["data"]["chunk"]: int(e["rank"]) for e in read_events(spec, "map_chunk")}
        assert sorted(chunk_ranks) == list(range(6)), strategy  # each chunk once
        by_chunk = [int(got["rank"][4 * c]) for c in range(6)]
        assert by_chunk == [chunk_ranks[c] for c in range(6)], strategy
        per_rank = summarize(decode(json.loads(line)) for line in _event_lines(spec)).ranks
        assert [r.rank for r in per_rank] == [0, 1], strategy
        assert sum(r.chunks_done for r in per_rank) == 6, strategy
        assert sum(r.items_done for r in per_rank) == num, strategy
        if strategy != "dynamic":  # a static plan: each rank's share is known, and done
            assert all(r.chunks_done == r.chunks_total for r in per_rank), strategy
            assert set(chunk_ranks.values()) == {0, 1}, strategy
        else:
            assert all(r.chunks_total is None for r in per_rank)


def _event_lines(spec: Any) -> list[str]:
    return (Path(spec.run_dir) / "events.jsonl").read_text().splitlines()


def test_records_with_any_number_of_rows_each_stay_in_order(
    tmp_path: Path, map_env: dict[str, str]
) -> None:
    num = 20
    data = _data(tmp_path, num)
    config = {
        "function": "userfns:repeat",
        "code": "userfns.py",
        "input": "r.jsonl",
        "output": "out/records",
        "map": {"strategy": "round_robin", "chunk_size": 3, "batch_size": 2},
    }
    _run(tmp_path, data, config, 3, map_env)
    got = output.read_output(data / "datasets" / "out" / "records")["output"]
    expected = [[n, k] for n in range(num) for k in range(n % 3)]
    assert got.tolist() == expected


def test_a_function_that_raises_fails_the_job_with_its_traceback(
    tmp_path: Path, map_env: dict[str, str]
) -> None:
    data = _data(tmp_path, 10)
    config = {
        "function": "userfns:fails_on_13",  # item 4 is [12, 13, 14]
        "input": "x.npy",
        "output": "out/fails",
        "map": {"strategy": "balanced", "chunk_size": 5, "batch_size": 5},
    }
    spec = make_spec(tmp_path / "fails", config, kind="map", data_dir=data)
    codes = run_ranks(spec, 2, extra_kinds=KIND, timeout_s=120, env=map_env)
    assert codes[0] == 1  # rank 0 had items [0, 5); rank 1 waits, then is stopped by the worker
    traceback = (tmp_path / "fails" / "run" / "rank0.traceback").read_text()
    assert 'raise ValueError("item 13 is unlucky")' in traceback  # the user's own line
    (error,) = [e for e in read_events(spec, "error") if e["rank"] == "0"]
    summary = error["data"]["message"]
    assert "userfns:fails_on_13 on items [0, 5) raised ValueError: item 13 is unlucky" in summary
    assert not (data / "datasets" / "out" / "fails" / output.MANIFEST).exists()
