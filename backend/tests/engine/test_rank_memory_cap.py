"""A rank of a sharing job caps its allocator at the job's reservation (engine/rank.py calls
engine/memory_cap.py once its device is set); exclusive jobs and CPU ranks are left alone."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gpudeck.engine import rank
from gpudeck.engine.contract import DeviceType, JobLaunch

GIB = 1024**3
MIB = 1024**2


def launch(
    tmp_path: Path, device_type: DeviceType, reserved: int | None, context: int | None
) -> JobLaunch:
    return JobLaunch(
        job_id=7,
        kind="sae",
        config={},
        run_dir=str(tmp_path / "run"),
        data_dir=str(tmp_path),
        checkpoint_dir=str(tmp_path / "ckpt"),
        device_type=device_type,
        device_indices=(0,),
        reserved_bytes_per_device=reserved,
        context_reserve_bytes=context,
    )


class FakeDevice:
    """An 80 GiB CUDA device on a CPU machine: records the device set and every cap asked."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events: list[tuple[str, object]] = []
        monkeypatch.setattr(torch.cuda, "set_device", lambda d: self.events.append(("set", d)))
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (79 * GIB, 80 * GIB))
        monkeypatch.setattr(rank, "cap_allocator", self.cap)

    def cap(self, reserved: int, total: int, *, context_reserve_bytes: int = 0) -> float:
        self.events.append(("cap", (reserved, total, context_reserve_bytes)))
        return (reserved - context_reserve_bytes) / total


def test_a_sharing_cuda_rank_caps_its_allocator_after_setting_its_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    device = FakeDevice(monkeypatch)
    caplog.set_level("INFO", logger=rank.__name__)
    found = rank._device(launch(tmp_path, "cuda", 8 * GIB + 500 * MIB, 500 * MIB))
    assert found == torch.device("cuda", 0)
    assert device.events == [("set", 0), ("cap", (8 * GIB + 500 * MIB, 80 * GIB, 500 * MIB))]
    assert "job 7: allocator capped at 0.1000 of the device" in caplog.text


def test_a_reservation_without_a_context_reserve_caps_at_the_whole_reservation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    device = FakeDevice(monkeypatch)
    rank._device(launch(tmp_path, "cuda", 4 * GIB, None))
    assert device.events[-1] == ("cap", (4 * GIB, 80 * GIB, 0))


@pytest.mark.parametrize(
    ("device_type", "reserved"), [("cuda", None), ("cpu", 4 * GIB), ("cpu", None)]
)
def test_exclusive_jobs_and_cpu_ranks_are_not_capped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, device_type: DeviceType, reserved: int | None
) -> None:
    device = FakeDevice(monkeypatch)
    context = None if reserved is None else 500 * MIB
    found = rank._device(launch(tmp_path, device_type, reserved, context))
    assert found.type == device_type
    assert [e for e in device.events if e[0] == "cap"] == []


@pytest.mark.gpu
def test_on_a_gpu_a_sharing_rank_runs_out_of_memory_at_its_reservation(tmp_path: Path) -> None:
    try:
        rank._device(launch(tmp_path, "cuda", 2 * GIB + 512 * MIB, 512 * MIB))
        kept = torch.empty(GIB, dtype=torch.uint8, device="cuda")  # within the 2 GiB cap
        with pytest.raises(torch.cuda.OutOfMemoryError):
            torch.empty(2 * GIB, dtype=torch.uint8, device="cuda")
        del kept
    finally:  # the cap is per process: the other GPU tests in it get the whole device back
        torch.cuda.set_per_process_memory_fraction(1.0)
        torch.cuda.empty_cache()
