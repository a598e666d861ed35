from __future__ import annotations

from typing import Any

import pynvml
import pytest
from telemetry.fake_nvml import InstallNvml, installer


@pytest.fixture
def fake_nvml(monkeypatch: pytest.MonkeyPatch) -> InstallNvml:
    return installer(monkeypatch)


@pytest.fixture
def no_nvml_library(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a machine without the NVIDIA driver: loading libnvidia-ml.so.1 fails."""

    def missing(name: str, *args: Any, **kwargs: Any) -> Any:
        raise OSError(f"{name}: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(pynvml, "nvmlLib", None)
    monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer_cache", {})
    monkeypatch.setattr(pynvml, "CDLL", missing)
