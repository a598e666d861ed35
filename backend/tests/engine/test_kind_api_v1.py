"""A kind written for kind API version 1 still runs (tests/kind_versions/gpudeck-kind-oldreg, as
last week's docs had a kind author write it): in real ranks, its positional save_checkpoint
writes the files version 1 wrote, one warning in the job's log says what to change, and its
own reader, load_checkpoint, resumes from its checkpoint exactly where the straight run goes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from rankrunner import make_spec, read_events, run_ranks

from gpudeck.engine import checkpoint
from gpudeck.engine.context import JsonlSink, TrainContext

PACKAGE = Path(__file__).resolve().parents[1] / "kind_versions" / "gpudeck-kind-oldreg"
# Before any rank process starts: the forkserver takes sys.path as it is when it starts.
sys.path.insert(0, str(PACKAGE))
KIND = ["gpudeck_kind_oldreg:KIND"]
CONFIG = {"steps": 30, "checkpoint_interval": 10, "metrics_interval": 10}
VERSION_1_FILES = {
    "sae_weights.safetensors",
    "cfg.json",
    "trainer_state.safetensors",
    "trainer_state.json",
    ".gpudeck-complete",
}


def _deprecations(spec_events: list[dict[str, object]]) -> list[str]:
    messages = [str(e["data"]["message"]) for e in spec_events]  # type: ignore[index]
    return [m for m in messages if m.startswith("DeprecationWarning")]


def test_a_version_1_kind_runs_warns_once_and_resumes_exactly(tmp_path: Path) -> None:
    straight = make_spec(tmp_path / "a", CONFIG, kind="oldreg")
    assert run_ranks(straight, 2, extra_kinds=KIND) == [0, 0]
    saved = checkpoint.list_checkpoints(straight.checkpoint_dir)
    assert [p.name for p in saved] == ["step_10", "step_20", "step_30"]
    assert {p.name for p in saved[0].iterdir()} == VERSION_1_FILES
    old = checkpoint.load_checkpoint(saved[-1])
    assert (old.step, old.state, old.cfg) == (30, {"step": 30}, {"kind": "oldreg"})

    warned = _deprecations(read_events(straight, "log"))
    assert len(warned) == 1  # three checkpoints, one line
    assert "kind 'oldreg' called save_checkpoint(step, weights, cfg_json" in warned[0]
    assert "save_checkpoint(step, *, tensor_files, json_files)" in warned[0]
    assert "until version 3" in warned[0]

    resumed = make_spec(tmp_path / "b", CONFIG, kind="oldreg", job_id=2, resume_from=str(saved[0]))
    assert run_ranks(resumed, 2, extra_kinds=KIND) == [0, 0]
    latest = checkpoint.latest_checkpoint(resumed.checkpoint_dir)
    assert latest is not None and latest.name == "step_30"
    final = checkpoint.load_checkpoint(latest)
    assert torch.equal(final.weights["weight"], old.weights["weight"])
    before = {e["data"]["step"]: e["data"]["metrics"] for e in read_events(straight, "metrics")}
    after = {e["data"]["step"]: e["data"]["metrics"] for e in read_events(resumed, "metrics")}
    assert after == {step: before[step] for step in (20, 30)}  # the curve goes on from 10
    logs = [e["data"]["message"] for e in read_events(resumed, "log")]
    assert f"resumed from {saved[0]} at step 10" in logs


def _context(tmp_path: Path) -> TrainContext:
    return TrainContext(
        rank=0,
        world_size=1,
        local_rank=0,
        device=torch.device("cpu"),
        job_id=1,
        config={},
        checkpoint_dir=tmp_path / "checkpoints",
        resume_from=None,
        data_dir=tmp_path,
        run_dir=tmp_path,
        sink=JsonlSink(tmp_path / "events.jsonl"),
        kind="mixed",
    )


def test_a_call_of_neither_version_is_refused_naming_the_call(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    with pytest.raises(TypeError, match=r"save_checkpoint\(step, \*, tensor_files, json_files\)"):
        ctx.save_checkpoint(1)
    files = {"w.safetensors": {"w": torch.zeros(1)}}
    with pytest.raises(TypeError, match="1 more positional arguments"):
        ctx.save_checkpoint(1, {"w": torch.zeros(1)}, tensor_files=files)
    with pytest.raises(TypeError, match="missing a required argument"):  # a short old call
        ctx.save_checkpoint(1, {"w": torch.zeros(1)}, {})
    assert checkpoint.list_checkpoints(ctx.checkpoint_dir) == []
