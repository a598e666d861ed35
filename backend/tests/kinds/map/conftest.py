"""Map jobs with a user's function: the kind loaded through GPUDECK_KIND_MODULES (the shared
venv knows only main's entry points), a code root holding `userfns.py`, and the server's
settings read again from the environment. Rank processes import the rank helpers (rankrunner,
in tests/engine) by their top-level names."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudeck.core.config import get_settings
from gpudeck.engine import kinds

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "engine"))


@pytest.fixture
def code_root(tmp_path: Path) -> Path:
    root = tmp_path / "code"
    root.mkdir()
    shutil.copy(HERE / "userfns.py", root / "userfns.py")
    return root


@pytest.fixture
def map_env(code_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The server settings a map job needs, in this process and for its ranks."""
    env = {
        "GPUDECK_KIND_MODULES": "gpudeck.kinds.map",
        "GPUDECK_SCRIPT_CODE_ROOTS": str(code_root),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    kinds.registry.cache_clear()
    get_settings.cache_clear()
    yield env
    kinds.registry.cache_clear()
    get_settings.cache_clear()
