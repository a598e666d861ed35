"""What `gpudeck run` supervises: each part can be started (again), asked how it ended, and
stopped; `Backoff` spaces the restarts of a part that keeps dying."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from gpudeck.core.embedded import EmbeddedPostgres, EmbeddedRedis, describe_exit
from gpudeck.core.linux import die_with_parent


@dataclass
class Backoff:
    """Exponential delay before each restart, capped; forgotten after a stable run."""

    initial_s: float = 0.5
    cap_s: float = 30.0
    stable_s: float = 60.0
    _next_s: float = field(default=0.0, init=False)

    def delay(self, ran_for_s: float) -> float:
        if ran_for_s >= self.stable_s or self._next_s == 0.0:
            self._next_s = self.initial_s
        else:
            self._next_s = min(self.cap_s, self._next_s * 2)
        return self._next_s


class ChildPart:
    """A child process in a session of its own (`gpudeck api` etc., or redis-server): a
    terminal's Ctrl-C reaches only the supervisor, which stops it in order."""

    def __init__(self, name: str, spawn: Callable[[], subprocess.Popen[bytes]]) -> None:
        self.name = name
        self._spawn = spawn
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = self._spawn()

    def exit_status(self) -> str | None:
        code = None if self.process is None else self.process.poll()
        return None if code is None else describe_exit(code)

    def terminate(self) -> None:
        self._signal_group(signal.SIGTERM)

    def wait(self, timeout_s: float) -> bool:
        if self.process is None:
            return True
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True

    def kill(self) -> None:
        """SIGKILL its group (anything it left there), and reap it."""
        self._signal_group(signal.SIGKILL)
        if self.process is not None:
            self.process.wait()

    def _signal_group(self, sig: signal.Signals) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, sig)


def gpudeck_part(name: str, env: dict[str, str], quiet: bool = False) -> ChildPart:
    """`gpudeck <name>`; `quiet`: its stdout (banners, Celery's shutdown notes) is dropped,
    its log (stderr: warnings and errors) still reaches the terminal."""

    def spawn() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", "gpudeck", name],
            env=env,
            start_new_session=True,
            stdout=subprocess.DEVNULL if quiet else None,
            preexec_fn=_stop_with_supervisor,
        )

    return ChildPart(name, spawn)


def _stop_with_supervisor() -> None:
    """SIGTERM (the part's own graceful stop) when `gpudeck run` dies without stopping it: the
    OOM killer, kill -9. Each part is in a session of its own, which no signal to the
    supervisor's group reaches: a browser test's run SIGKILLed during its stop left its
    scheduler retrying a removed Postgres for an hour."""
    die_with_parent(signal.SIGTERM)


class RedisPart(ChildPart):
    def __init__(self, redis: EmbeddedRedis) -> None:
        def spawn() -> subprocess.Popen[bytes]:
            redis.start()
            assert redis.process is not None
            return redis.process

        super().__init__("redis", spawn)
        self.process = redis.process  # started already, before the parts that need it


class PostgresPart:
    """pgserver's postmaster: daemonized by pg_ctl, watched and stopped by its pid."""

    name = "postgres"

    def __init__(self, postgres: EmbeddedPostgres) -> None:
        self.postgres = postgres

    def start(self) -> None:
        self.postgres.start()

    def exit_status(self) -> str | None:
        return self.postgres.exit_status()

    def terminate(self) -> None:
        pid = self.postgres.pid
        if pid is not None and pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)  # fast shutdown

    def wait(self, timeout_s: float) -> bool:
        self.postgres.stop(timeout_s)
        return True

    def kill(self) -> None:
        self.postgres.stop(0)


Part = ChildPart | PostgresPart
