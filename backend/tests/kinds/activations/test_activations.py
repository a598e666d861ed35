"""The `activations` kind on real ranks (gloo, one process each): the output equals, element
for element in fp32, a single-process reference whatever the rank count and strategy; small
inputs fall back to fewer ranks; a job killed mid-way resumes without writing any chunk twice;
the `sae` kind trains on what it wrote."""

from __future__ import annotations

import json
import math
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rankrunner
import torch
from activations_fixtures import (
    CONTEXT,
    assert_same_rows,
    id_batches,
    reference,
    text_batches,
    texts,
    tiny_gpt2,
    token_ids,
)
from rankrunner import make_spec, read_events, run_ranks, start_ranks

from gpudeck.engine.map import output

KIND = ["gpudeck.kinds.activations:KIND"]
# Ranks fork from rankrunner's forkserver; importing transformers there once (not in every
# rank) keeps these tests fast. It only takes effect if the forkserver has not started yet.
rankrunner._CTX.set_forkserver_preload(
    ["torch", "torch.distributed", "gpudeck.engine.rank", "transformers",
     "transformers.models.gpt2.modeling_gpt2", "transformers.models.auto.modeling_auto"]
)  # fmt: skip


def _data(tmp: Path, num: int, *, with_tokenizer: bool = False) -> tuple[Path, Path]:
    data = tmp / "data"
    (data / "datasets").mkdir(parents=True)
    model = tiny_gpt2(data / "models", with_tokenizer=with_tokenizer)
    np.save(data / "datasets" / "ids.npy", token_ids(num))
    return data, model


def _config(**overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "model": "gpt2-tiny",
        "input": "ids.npy",
        "hook": "transformer.h.0",
        "context_length": CONTEXT,
        "output": "acts/run",
        "map": {"strategy": "balanced", "chunk_size": 4, "batch_size": 2},
    }
    config.update(overrides)
    return config


def _run(tmp: Path, data: Path, config: dict[str, Any], world: int, name: str = "run") -> Any:
    spec = make_spec(tmp / name, config, kind="activations", data_dir=data)
    assert run_ranks(spec, world, extra_kinds=KIND, timeout_s=240) == [0] * world, [
        p.read_text() for p in (tmp / name / "run").glob("*.traceback")
    ]
    return spec


MAP_OPTIONS: dict[str, dict[str, Any]] = {
    "balanced": {},
    "memory": {"free_memory_bytes": [3 << 30, 1 << 30, 2 << 30]},
    "sequential": {"max_items_per_device": 8},
    "round_robin": {},
    "dynamic": {},
}


@pytest.mark.parametrize("world", [1, 2, 3])
@pytest.mark.parametrize("strategy", list(MAP_OPTIONS))
def test_every_rank_count_and_strategy_gives_the_reference(
    tmp_path: Path, world: int, strategy: str
) -> None:
    num = 37  # 10 chunks of 4, the last of 1: uneven shares for 2 and 3 ranks
    data, model = _data(tmp_path, num)
    options = {"strategy": strategy, "chunk_size": 4, "batch_size": 2, **MAP_OPTIONS[strategy]}
    spec = _run(tmp_path, data, _config(map=options), world)
    out = data / "datasets" / "acts" / "run"
    expected = reference(model, id_batches(token_ids(num), 2), layer=0)
    got = output.read_output(out)["activations"]
    assert got.dtype == torch.float32
    assert_same_rows(got, expected)
    assert sorted(output.written_chunks(out)) == list(range(10))
    chunks = [e["data"]["chunk"] for e in read_events(spec, "map_chunk")]
    assert sorted(chunks) == list(range(10))  # each written once
    assert {int(e["rank"]) for e in read_events(spec, "map_chunk")} <= set(range(world))
    cfg = json.loads((out / "cfg.json").read_text())
    assert (cfg["d_in"], cfg["count"], cfg["hook"]) == (32, num * CONTEXT, "transformer.h.0")


def test_text_input_last_token_and_input_hook(tmp_path: Path) -> None:
    data, model = _data(tmp_path, 1, with_tokenizer=True)
    lines = texts(23)
    jsonl = "".join(json.dumps({"text": line}) + "\n" for line in lines)
    (data / "datasets" / "t.jsonl").write_text(jsonl)
    batches = text_batches(model, lines, 3)
    map_options = {"strategy": "dynamic", "chunk_size": 6, "batch_size": 3}
    for positions in ("all", "last"):
        config = _config(
            input="t.jsonl",
            hook="transformer.h.1",  # its input is block 0's output
            hook_io="input",
            positions=positions,
            output=f"acts/{positions}",
            map=map_options,
        )
        _run(tmp_path, data, config, 2, name=positions)
        got = output.read_output(data / "datasets" / "acts" / positions)["activations"]
        assert_same_rows(got, reference(model, batches, layer=0, positions=positions))


def test_fewer_items_than_ranks_falls_back(tmp_path: Path) -> None:
    data, model = _data(tmp_path, 2)
    spec = _run(tmp_path, data, _config(map={"chunk_size": 1, "batch_size": 1}), 3)
    ranks = Counter(int(e["rank"]) for e in read_events(spec, "map_chunk"))
    assert ranks == {0: 1, 1: 1}  # two items: the third rank does nothing
    got = output.read_output(data / "datasets" / "acts" / "run")["activations"]
    assert_same_rows(got, reference(model, id_batches(token_ids(2), 1), layer=0))
    few = _config(output="acts/one", map={"chunk_size": 4, "min_items_per_device": 64})
    spec = _run(tmp_path, data, few, 2, name="one")
    assert {e["rank"] for e in read_events(spec, "map_chunk")} == {"0"}


@pytest.mark.long
def test_a_killed_job_resumes_writing_each_chunk_exactly_once(tmp_path: Path) -> None:
    num = 400  # chunks of one item: the kill comes after 20, the resume writes the rest
    data, model = _data(tmp_path, num)
    config = _config(map={"strategy": "dynamic", "chunk_size": 1, "batch_size": 1})
    out = data / "datasets" / "acts" / "run"
    first = make_spec(tmp_path / "first", config, kind="activations", data_dir=data)
    procs = start_ranks(first, 2, extra_kinds=KIND)
    deadline = time.monotonic() + 120
    while len(output.written_chunks(out)) < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(procs[1].pid, signal.SIGKILL)  # a rank lost mid-job; the worker then ends the rest
    os.kill(procs[0].pid, signal.SIGKILL)
    for proc in procs:
        proc.join(30)
    before = output.written_chunks(out)
    assert 20 <= len(before) < num, "the job must be cut mid-way"
    assert not (out / output.MANIFEST).exists()

    resumed = _run(tmp_path, data, config, 2, name="resumed")
    events = read_events(resumed, "map_chunk")
    assert all(e["data"]["written"] for e in events)
    again = Counter(e["data"]["chunk"] for e in events)
    assert max(again.values()) == 1
    assert not set(again) & before  # nothing already written is redone
    assert set(again) | before == set(range(num))
    assert not list(out.glob(".chunk_*"))
    got = output.read_output(out)["activations"]
    assert_same_rows(got, reference(model, id_batches(token_ids(num), 1), layer=0))


def test_the_sae_kind_trains_on_the_output(tmp_path: Path) -> None:
    data, _ = _data(tmp_path, 40)
    _run(tmp_path, data, _config(map={"strategy": "round_robin", "chunk_size": 8}), 2)
    cfg = json.loads((data / "datasets" / "acts" / "run" / "cfg.json").read_text())
    sae = rankrunner.tiny_config(
        d_in=cfg["d_in"], d_sae=64, batch_size=32, steps=30, dataset=cfg["sae_dataset"]
    )
    spec = make_spec(tmp_path / "sae", sae, data_dir=data, job_id=2)
    assert run_ranks(spec, 2) == [0, 0]
    (metrics,) = read_events(spec, "metrics")[-1:]
    assert math.isfinite(metrics["data"]["metrics"]["overall_loss"])


def test_throughput_is_reported_while_it_runs_and_ends_at_the_last_item(tmp_path: Path) -> None:
    """Issue 25: the Throughput chart stayed empty: the only point was the last report, at
    step 0. Rank 0 reports its items/s at each chunk it writes; the kind's total ends the
    curve at the last item. And the job page had no word of where the output went."""
    data, _ = _data(tmp_path, 40)
    spec = _run(tmp_path, data, _config(map={"strategy": "balanced", "chunk_size": 8}), 1)
    points = [(e["data"]["step"], e["data"]["metrics"]) for e in read_events(spec, "metrics")]
    steps = [step for step, _ in points]
    assert steps == [8, 16, 24, 32, 40], steps
    assert all(m["items_per_s"] > 0 for _, m in points)
    assert points[-1][1]["rows"] > 0  # the kind's own report, last
    (start,) = read_events(spec, "map_start")  # the job page says where the output went
    assert start["data"]["output_dir"] == str((data / "datasets" / "acts" / "run").resolve())


def test_batch_size_auto_takes_the_largest_batch_that_fits(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    from gpudeck.kinds.activations.extract import estimate_bytes

    data, model = _data(tmp_path, 21)
    per_batch = estimate_bytes(AutoModelForCausalLM.from_pretrained(model), CONTEXT)
    free = int(per_batch(3) / 0.9) + 1  # room for 3 sequences, not 4
    options = {"chunk_size": 8, "batch_size": "auto", "free_memory_bytes": [free, free]}
    spec = _run(tmp_path, data, _config(map=options), 2)
    assert {e["data"]["batch_size"] for e in read_events(spec, "map_start")} == {3}
    got = output.read_output(data / "datasets" / "acts" / "run")["activations"]
    # batches of 3 restart at each chunk of 8: [0,3) [3,6) [6,8) [8,11) ...
    batches = [
        b for start in range(0, 21, 8) for b in id_batches(token_ids(21)[start : start + 8], 3)
    ]
    assert_same_rows(got, reference(model, batches, layer=0))


@pytest.mark.parametrize(
    ("field", "value"),
    [("model", "../up"), ("input", "ids.csv"), ("output", "a/../../b"), ("hook", "h.0; x")],
)
def test_the_config_refuses_paths_out_and_odd_hooks(field: str, value: str) -> None:
    from pydantic import ValidationError

    from gpudeck.kinds.activations.config import ActivationsConfig

    with pytest.raises(ValidationError, match=field):
        ActivationsConfig.model_validate(_config(**{field: value}))


def test_an_output_directory_of_another_job_is_refused_by_every_rank(tmp_path: Path) -> None:
    data, _ = _data(tmp_path, 6)
    _run(tmp_path, data, _config(), 2)
    other = make_spec(tmp_path / "other", _config(hook="transformer.h.1"), kind="activations",
                      data_dir=data)  # fmt: skip
    assert run_ranks(other, 2, extra_kinds=KIND, timeout_s=120) == [1, 1]
    text = (tmp_path / "other" / "run" / "rank1.traceback").read_text()
    assert "holds chunks of a different job (differs in hook)" in text
