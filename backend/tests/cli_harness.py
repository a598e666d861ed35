"""The real `gpudeck` command, run as a user runs it, for CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BACKEND = Path(__file__).resolve().parents[1]


@dataclass
class Cli:
    """Runs `python -m gpudeck ...` as a user would, with GPUDECK_URL and GPUDECK_TOKEN set."""

    url: str
    token: str | None
    home: Path

    def __call__(
        self, *args: str, token: str | None = "", timeout_s: float = 180, **env: str
    ) -> subprocess.CompletedProcess[str]:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("GPUDECK_")}
        environ.update(GPUDECK_URL=self.url, HOME=str(self.home), **env)
        environ.pop("COLUMNS", None)  # piped, as in a script: no terminal width
        chosen = self.token if token == "" else token
        if chosen:
            environ["GPUDECK_TOKEN"] = chosen
        return subprocess.run(
            [sys.executable, "-m", "gpudeck", *args],
            cwd=BACKEND,
            env=environ,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
