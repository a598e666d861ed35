"""The allocator cap a rank on a shared device sets (engine/memory_cap.py)."""

from __future__ import annotations

import pytest
import torch

from gpudeck.engine.memory_cap import cap_allocator

GIB = 1024**3


class FakeCuda:
    """Stands for a CUDA device 3 on a CPU machine: records the fraction set."""

    def __init__(self) -> None:
        self.set: list[tuple[float, int]] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
        monkeypatch.setattr(
            torch.cuda,
            "set_per_process_memory_fraction",
            lambda fraction, device: self.set.append((fraction, device)),
        )


def test_without_cuda_nothing_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    called: list[float] = []
    monkeypatch.setattr(
        torch.cuda, "set_per_process_memory_fraction", lambda f, device=None: called.append(f)
    )
    assert cap_allocator(8 * GIB, 80 * GIB) == 1.0 and called == []


def test_the_fraction_is_the_reservation_less_the_context_over_the_total(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cuda = FakeCuda()
    cuda.install(monkeypatch)
    assert cap_allocator(8 * GIB, 80 * GIB) == 0.1
    assert cap_allocator(8 * GIB, 80 * GIB, context_reserve_bytes=GIB) == 7 / 80
    assert cap_allocator(100 * GIB, 80 * GIB) == 1.0  # never past the whole device
    assert cuda.set == [(0.1, 3), (7 / 80, 3), (1.0, 3)]


@pytest.mark.parametrize(
    ("reserved", "total", "context"), [(0, 80 * GIB, 0), (GIB, 0, 0), (GIB, 80 * GIB, GIB)]
)
def test_impossible_figures_are_refused(reserved: int, total: int, context: int) -> None:
    with pytest.raises(ValueError):
        cap_allocator(reserved, total, context_reserve_bytes=context)


@pytest.mark.gpu
def test_on_a_gpu_an_allocation_past_the_cap_is_an_out_of_memory_error() -> None:
    total = torch.cuda.mem_get_info()[1]
    try:
        assert cap_allocator(2 * GIB, total) == 2 * GIB / total
        kept = torch.empty(GIB, dtype=torch.uint8, device="cuda")  # within the cap
        with pytest.raises(torch.cuda.OutOfMemoryError):
            torch.empty(2 * GIB, dtype=torch.uint8, device="cuda")
        assert torch.cuda.memory_reserved() <= 2 * GIB
        del kept
    finally:  # the cap is per process: the other GPU tests in it get the whole device back
        torch.cuda.set_per_process_memory_fraction(1.0)
        torch.cuda.empty_cache()
