"""How Slurm's commands are run: an injected runner of argv lists, never a shell string.

The local runner is a subprocess on this machine; the SSH runner (ssh.py) is the same protocol
with `ssh ... user@host --` in front (its argv quoted for the remote shell with shlex.join).
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


class CommandTimedOut(Exception):
    """The command did not end within its time: on Slurm, a controller that does not answer."""


class CommandRunner(Protocol):
    def __call__(
        self, argv: Sequence[str], *, input_text: str | None = None, timeout_s: float
    ) -> CommandResult: ...


@dataclass(frozen=True)
class LocalRunner:
    """Runs each command here; `env`, when given, is the whole environment (e.g. SLURM_CONF)."""

    env: Mapping[str, str] | None = None

    def __call__(
        self, argv: Sequence[str], *, input_text: str | None = None, timeout_s: float
    ) -> CommandResult:
        try:
            done = subprocess.run(
                list(argv), input=input_text, capture_output=True, text=True,
                timeout=timeout_s, env=dict(self.env) if self.env is not None else None,
                check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            raise CommandTimedOut(f"{argv[0]} did not answer within {timeout_s:g} s") from exc
        return CommandResult(tuple(argv), done.returncode, done.stdout, done.stderr)
