"""Engine tests: tests/engine holds their helpers (rankrunner, linreg_kind); rank processes
import them by these top-level names, so the folder must be on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
