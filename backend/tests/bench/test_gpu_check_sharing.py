"""The GPU check's sharing section (bench/gpucheck/sharing.py), its CPU side: the figures it
computes from the members' runs, its verdicts, its members, and a clean skip without CUDA. Its
runs themselves are the dry run's (test_gpu_check.py) and a GPU machine's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from gpucheck import sharing
from gpucheck.rows import Check
from gpucheck.sharing_runs import MemberRun

from gpudeck.services.placement.recommend import usable_when_idle
from gpudeck.services.submit.estimates import estimate_bytes_per_device

GIB, MIB = 1024**3, 1024**2


def ran(rate: float | None = 1000.0, code: int = 0, oom: bool = False) -> MemberRun:
    return MemberRun(code, oom, 10.0, rate, 2 * GIB)


def test_the_throughput_ratio_is_the_work_alone_over_the_packed_wall_clock() -> None:
    assert sharing.throughput_ratio([10.0, 20.0, 30.0, 40.0], 50.0) == 2.0
    assert sharing.throughput_ratio([10.0, 10.0], 25.0) == 0.8  # packing lost


def test_each_members_slowdown_is_its_rate_alone_over_packed() -> None:
    alone = [ran(1190.0), ran(1000.0), ran(None)]
    packed = [ran(1000.0), ran(1000.0), ran(500.0)]
    assert sharing.slowdowns(alone, packed) == [pytest.approx(0.19), 0.0, None]


def test_the_context_reserve_is_what_the_device_holds_beyond_the_allocator() -> None:
    assert sharing.context_reserve_bytes(2 * GIB + 530 * MIB, 2 * GIB) == 530 * MIB
    assert sharing.context_reserve_bytes(GIB, 2 * GIB) == 0  # a sample missed the peak


def test_the_members_are_four_small_saes_that_fit_four_to_an_80_gib_device(
    tmp_path: Path,
) -> None:
    configs = sharing.member_configs(Check(False, 1, tmp_path))
    assert [c["d_sae"] for c in configs] == [4096, 8192, 12288, 16384]
    assert [c["seed"] for c in configs] == [0, 1, 2, 3]
    reserved = [estimate_bytes_per_device("sae", c, 1) or 0 for c in configs]
    assert sum(reserved) + 4 * sharing.DEFAULT_CUDA_CONTEXT_RESERVE_BYTES <= usable_when_idle(
        80 * GIB
    )
    short = sharing.member_configs(Check(False, 1, tmp_path), sharing.REPEAT_STEPS)
    assert {c["steps"] for c in short} == {sharing.REPEAT_STEPS}


class FakeMembers:
    """Stands for the runs: each packed run answers the next of `answers`."""

    def __init__(self, answers: list[list[MemberRun]]) -> None:
        self.answers, self.asked = answers, list[list[int]]()
        self.context = 500 * MIB

    def packed(self, reserved: list[int]) -> tuple[float, list[MemberRun]]:
        self.asked.append(list(reserved))
        return 5.0, self.answers.pop(0)


def test_the_over_allocating_member_must_die_alone_of_its_allocators_refusal() -> None:
    configs = [{"d_sae": 4096}, {"d_sae": 16384}]
    alone = FakeMembers([[ran(), ran(code=1, oom=True)]])
    row = sharing._over_allocating_row(alone, [GIB, 3 * GIB], configs)  # type: ignore[arg-type]
    assert row.verdict == "pass"
    # A quarter of its estimate, its context reserve kept: 500 MiB + (3 GiB - 500 MiB) / 4.
    assert alone.asked == [[GIB, 500 * MIB + (3 * GIB - 500 * MIB) // 4]]
    both = FakeMembers([[ran(code=1), ran(code=1, oom=True)]])
    assert sharing._over_allocating_row(both, [GIB, GIB], configs).verdict == "FAIL"  # type: ignore[arg-type]


def test_the_repeats_count_every_out_of_memory_and_say_when_the_budget_cut_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = [[ran(), ran()] for _ in range(sharing.REPEATS)]
    answers[3] = [ran(), ran(code=1, oom=True)]
    row = sharing._repeats_row(FakeMembers(answers), [GIB, GIB])  # type: ignore[arg-type]
    assert row.verdict == "FAIL" and row.figure.startswith("1 OOM, 0 other failures in 20 of 20")
    monkeypatch.setattr(sharing, "REPEAT_BUDGET_S", 0.0)
    row = sharing._repeats_row(FakeMembers([[ran()]]), [GIB])  # type: ignore[arg-type]
    assert row.verdict == "pass" and "in 1 of 20 repeats (time budget 0 s reached)" in row.figure


def test_without_cuda_the_section_says_so_in_one_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    (row,) = sharing.run(Check(False, 1, tmp_path))
    assert row.verdict == "not run" and "no CUDA" in row.figure
