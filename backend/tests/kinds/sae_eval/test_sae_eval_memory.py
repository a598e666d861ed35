"""The evaluation's memory estimate against a count by hand: each term of the breakdown, the
CUDA constants added, and what it says when the source has no checkpoint yet."""

from __future__ import annotations

from pathlib import Path

from sae_eval_fixtures import SOURCE_JOB, write_sae_checkpoint

from gpudeck.kinds.sae.memory import CUBLAS_WORKSPACE_BYTES, CUDA_CONTEXT_BYTES, NCCL_BYTES
from gpudeck.kinds.sae_eval.config import SaeEvalConfig
from gpudeck.kinds.sae_eval.memory import LmShape, SaeShape, assemble, estimate_memory


def test_the_sae_terms_match_a_hand_count() -> None:
    found = assemble(SaeShape(d_in=2, d_sae=3, itemsize=4), 3, None, 1, "cpu")
    assert found.bytes_by_component() == {
        "sae_parameters": (2 * 2 * 3 + 2 + 3) * 4,  # 68
        "row_batch": 3 * (2 * (4 + 4 * 8) + 3 * (3 * 4 + 1)),  # 333
        "score_sums": (3 + 2 * 2) * 8,  # 56
        "cublas_workspace": 0,
        "framework_reserve": 0,
    }
    assert found.bytes_per_device == found.peak_step_bytes == 68 + 333 + 56
    on_cuda = assemble(SaeShape(2, 3, 4), 3, None, 2, "cuda")
    assert on_cuda.peak_step_bytes == 457 + CUBLAS_WORKSPACE_BYTES
    assert (
        on_cuda.bytes_per_device == 457 + CUBLAS_WORKSPACE_BYTES + CUDA_CONTEXT_BYTES + NCCL_BYTES
    )
    assert on_cuda.per_rank_batch == 3  # every rank scores whole batches


def test_the_language_model_terms_match_a_hand_count() -> None:
    lm = LmShape(parameters=1000, itemsize=4, width=32, heads=4, vocab=100, context_length=16,
                 batch=8)  # fmt: skip
    found = assemble(SaeShape(d_in=32, d_sae=64, itemsize=4), 1, lm, 1, "cpu")
    by_name = found.bytes_by_component()
    assert by_name["lm_parameters"] == 4000
    assert by_name["lm_forward"] == 8 * (16 * 32 * 20 + 4 * 16 * 16 * 2) * 4  # 393,216
    assert by_name["lm_logits"] == 8 * 16 * 100 * (4 + 3 * 4)  # 204,800
    assert by_name["sae_at_hook"] == 8 * 16 * (32 * 2 * 4 + 64 * 2 * 4)  # 98,304
    assert found.bytes_per_device == sum(by_name.values())


def test_a_source_without_a_checkpoint_is_said_to_be_left_out(tmp_path: Path) -> None:
    config = SaeEvalConfig(source_job=SOURCE_JOB)
    waiting = estimate_memory(config, 1, device_type="cpu", data_dir=tmp_path)
    assert "not counted: the SAE" in waiting.method and waiting.bytes_per_device == 0
    write_sae_checkpoint(tmp_path, 5)
    there = estimate_memory(config, 1, device_type="cpu", data_dir=tmp_path)
    assert "not counted" not in there.method
    assert there.bytes_by_component()["sae_parameters"] == 68
