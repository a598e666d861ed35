"""Tests of the built-in `activations` kind. Rank processes import the rank helpers
(rankrunner, in tests/engine) by their top-level names, so that folder and this one must be
on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "engine"))
sys.path.insert(0, str(HERE))
