"""The rank runtime: kinds plug in, failures are recorded, SIGTERM cancels with a checkpoint."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np
import torch
from rankrunner import make_spec, read_events, run_ranks, start_ranks, tiny_config

from gpudeck.engine import checkpoint
from gpudeck.kinds.sae import checkpoint as sae_checkpoint
from gpudeck.kinds.sae.data import FileSource, GlobalBatchLoader
from gpudeck.kinds.sae.heldout import split_heldout


def test_a_plugged_in_kind_gets_the_same_context(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, {"steps": 200}, kind="linreg")
    assert run_ranks(spec, 2, extra_kinds=["linreg_kind:LINREG_KIND"]) == [0, 0]
    (metrics,) = read_events(spec, "metrics")
    assert metrics["data"]["metrics"]["loss"] < 1e-3
    assert metrics["data"]["metrics"]["world_size"] == 2.0
    logs = sorted(e["data"]["message"] for e in read_events(spec, "log"))
    assert logs == ["rank 0 of 2 on cpu", "rank 1 of 2 on cpu"]
    ckpt = checkpoint.open_checkpoint(checkpoint.latest_checkpoint(spec.checkpoint_dir))  # type: ignore[arg-type]
    assert ckpt.step == 200 and ckpt.read_json("about.json") == {"kind": "linreg"}
    assert ckpt.read_tensors("model.safetensors")["weight"].shape == (1, 4)


def test_a_failing_rank_leaves_its_traceback(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, {}, kind="failing")
    codes = run_ranks(spec, 2, extra_kinds=["linreg_kind:FAILING_KIND"], timeout_s=60)
    assert codes[1] == 1
    assert "boom on purpose" in (tmp_path / "run" / "rank1.traceback").read_text()
    errors = [e for e in read_events(spec, "error") if e["rank"] == "1"]
    assert errors and errors[0]["data"]["message"] == "RuntimeError: boom on purpose"


def test_an_unknown_kind_fails_cleanly(tmp_path: Path) -> None:
    spec = make_spec(tmp_path, {}, kind="nope")
    assert run_ranks(spec, 1, timeout_s=60) == [1]
    assert "unknown job kind 'nope'" in (tmp_path / "run" / "rank0.traceback").read_text()


def test_sigterm_stops_all_ranks_with_a_final_checkpoint(tmp_path: Path) -> None:
    config = tiny_config(steps=1_000_000, metrics_interval=10)
    spec = make_spec(tmp_path, config)
    procs = start_ranks(spec, 2)
    deadline = time.monotonic() + 60
    while not read_events(spec, "metrics") and time.monotonic() < deadline:
        time.sleep(0.2)
    os.kill(procs[1].pid, signal.SIGTERM)  # one rank is enough: the stop is agreed by all
    for proc in procs:
        proc.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    latest = checkpoint.latest_checkpoint(spec.checkpoint_dir)
    assert latest is not None
    step = sae_checkpoint.load(latest).step
    assert 10 <= step < 1_000_000
    assert read_events(spec, "progress")[-1]["data"] == {"step": step, "total": 1_000_000}


def test_a_loss_that_becomes_nan_fails_the_job_naming_the_step(tmp_path: Path) -> None:
    """An Inf in one activation row: the step that reads it fails the job, by name, and the
    newest checkpoint is the last good one (no checkpoint of NaN weights is written)."""
    rows, bad_step = 64 * 20, 7
    acts = np.random.default_rng(0).standard_normal((rows, 16)).astype(np.float32)
    acts[:, 0] = np.arange(rows)  # each row says its index: find the one step 7 reads
    datasets = tmp_path / "data" / "datasets"
    datasets.mkdir(parents=True)
    np.save(datasets / "acts.npy", acts)
    # The rows training reads: the file's last rows are held out (kinds/sae/heldout.py).
    source, _ = split_heldout(FileSource(datasets / "acts.npy", None, 16), 64)
    loader = GlobalBatchLoader(source, global_batch=64, rank=0, world_size=1, seed=3)
    batches = [loader.next_batch() for _ in range(bad_step)]
    acts[int(batches[-1][0, 0]), 3] = np.inf  # read first at step 7 (an epoch is 20 steps)
    np.save(datasets / "acts.npy", acts)
    config = tiny_config(
        steps=100,
        checkpoint_interval=1,
        metrics_interval=1,
        dataset={"type": "file", "path": "acts.npy"},
    )
    spec = make_spec(tmp_path, config)

    assert run_ranks(spec, 2, timeout_s=120) == [1, 1]
    for rank in (0, 1):
        text = (tmp_path / "run" / f"rank{rank}.traceback").read_text()
        assert "NonFiniteLoss: loss became nan at step 7" in text, text
    assert [e["data"]["step"] for e in read_events(spec, "metrics")] == list(range(1, 7))
    saved = checkpoint.list_checkpoints(spec.checkpoint_dir)
    assert [sae_checkpoint.load(p).step for p in saved] == [4, 5, 6]
    weights = sae_checkpoint.load(saved[-1]).weights
    assert all(torch.isfinite(w).all() for w in weights.values())
