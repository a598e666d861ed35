"""The real SAELens, in its own venv, loading a checkpoint directory GPUDeck wrote: the checks
(saelens_server.py) that the engine's checkpoint tests, the SAE kind's export test and the Slurm
executor's tests share, asked of one long-lived SAELens process (the `sae_lens` fixture)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NoReturn

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).with_name("saelens_server.py")


def sae_lens_python() -> Path:
    """SAELens lives in its own venv (it pulls transformers, datasets, ...; ~1 GB) that
    `make test` creates: .venv-saelens at the repository root, or GPUDECK_SAELENS_PYTHON."""
    configured = os.environ.get("GPUDECK_SAELENS_PYTHON")
    python = Path(configured) if configured else REPO_ROOT / ".venv-saelens" / "bin" / "python"
    assert python.exists(), f"{python} is missing: `make saelens` installs SAELens for this test"
    return python


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    output: str  # what the check printed
    error: str  # its traceback, SAELens's own message, when not ok


class SaeLens:
    """One SAELens server process: started on the first check, and again on the check after it
    died (that check fails, naming the death and the end of the server's stderr)."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None
        self._stderr: IO[bytes] | None = None

    def check(self, name: str, *args: str | Path, timeout_s: float = 300) -> CheckResult:
        """Run the server's check `name` (load, load_any, compare) on args."""
        process = self._started()
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps({"check": name, "args": [str(a) for a in args]}) + "\n")
            process.stdin.flush()
        except BrokenPipeError:
            self._died(name, "it had exited before the check was sent")
        ready, _, _ = select.select([process.stdout], [], [], timeout_s)
        line = process.stdout.readline() if ready else ""
        if not line:
            self._died(name, "it exited" if ready else f"no answer in {timeout_s} s, killed")
        return CheckResult(**json.loads(line))

    def close(self) -> None:
        """End the server: it exits when its stdin closes; killed if it does not within 10 s."""
        process, self._process = self._process, None
        if process is not None:
            assert process.stdin is not None and process.stdout is not None
            with contextlib.suppress(BrokenPipeError):  # a dead server's unsent request
                process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _started(self) -> subprocess.Popen[str]:
        if self._process is None:
            self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (close() closes it)
            self._process = subprocess.Popen(
                [str(sae_lens_python()), str(SERVER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                text=True,
            )
        return self._process

    def _died(self, check: str, how: str) -> NoReturn:
        assert self._process is not None and self._stderr is not None
        pid = self._process.pid
        self._process.kill()  # at a timeout it may still run; the next check starts a fresh one
        code = self._process.wait()
        self._stderr.seek(0)
        tail = self._stderr.read()[-3000:].decode(errors="replace")
        self.close()
        raise RuntimeError(
            f"the SAELens server (pid {pid}) died during check {check!r}: {how} "
            f"(exit code {code}); its stderr ends:\n{tail}"
        )
