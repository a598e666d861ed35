"""Tests of the built-in `sae` kind. Its helpers (memory_measure) live here and the rank
helpers (rankrunner) in tests/engine; rank processes import both by their top-level names, so
both folders must be on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "engine"))
sys.path.insert(0, str(HERE))
