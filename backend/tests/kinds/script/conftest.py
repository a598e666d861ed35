"""Script jobs in tests: the kind loaded through GPUDECK_KIND_MODULES (the shared venv knows
only main's entry points), a code root holding the examples and small test scripts, and the
server's settings read again from the environment."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudeck.core.config import get_settings
from gpudeck.engine import kinds

REPO = Path(__file__).resolve().parents[4]
EXAMPLE = REPO / "examples" / "scripts" / "ddp_train.py"
HERE = Path(__file__).resolve().parent


@pytest.fixture
def code_root(tmp_path: Path) -> Path:
    root = tmp_path / "code"
    root.mkdir()
    shutil.copy(EXAMPLE, root / "ddp_train.py")
    shutil.copy(HERE / "scripts" / "echo_args.py", root / "echo_args.py")
    shutil.copy(HERE / "scripts" / "ignore_sigterm.py", root / "ignore_sigterm.py")
    return root


@pytest.fixture
def script_env(code_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The server settings a script job needs, in this process and for a worker."""
    env = {
        "GPUDECK_KIND_MODULES": "e2e_kinds,gpudeck.kinds.script",
        "GPUDECK_SCRIPT_CODE_ROOTS": str(code_root),
        "GPUDECK_SCRIPT_INTERPRETERS": f"default={sys.executable},venv={sys.executable}",
        "GPUDECK_SCRIPT_ENV_ALLOWLIST": "GREETING,PYTHONHASHSEED",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    kinds.registry.cache_clear()
    get_settings.cache_clear()
    yield env
    kinds.registry.cache_clear()
    get_settings.cache_clear()
