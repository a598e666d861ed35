"""Slurm's commands on a login node, over SSH: the same runner protocol as `LocalRunner`.

The argv is quoted for the remote shell with `shlex.join` after `--`, so an argument holding
spaces, quotes or `;` arrives as one argument and nothing of it is run as shell. ssh never
prompts (BatchMode) and never trusts a host key it does not already hold (StrictHostKeyChecking
against the cluster's own known_hosts file). Exit 255 is ssh's own failure (the login node did
not answer, refused us, or showed another host key), never the remote command's: it raises
`LoginNodeUnreachable`, which the client reads as it reads a controller that does not answer
(jobs `unknown`, never `failed`). The key's contents are never read or logged, only its path.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpudeck.slurm.runner import CommandResult, CommandTimedOut

SSH_FAILED = 255  # ssh's exit status for its own errors; a remote command's is passed through
# A unix socket's path holds at most 107 bytes; %C expands to 40 hex characters.
_SOCKET_PATH_MAX = 107
_CONTROL_NAME_LEN = 40
_HOST_KEY_WORDS = ("Host key verification failed", "REMOTE HOST IDENTIFICATION HAS CHANGED")


class LoginNodeUnreachable(CommandTimedOut):
    """ssh could not run the command on the login node (exit 255): no answer, refused, or not
    authenticated. Nothing is known of Slurm then, exactly as when slurmctld is silent."""


class HostKeyRejected(LoginNodeUnreachable):
    """The login node showed a host key the cluster's known_hosts file does not hold."""


class KeyRefused(LoginNodeUnreachable):
    """The login node did not take the key (Permission denied)."""


@dataclass(frozen=True)
class SshRunner:
    """Runs each command as `user_host` (user@host) on the login node. `control_dir`, when
    given, keeps one connection per login node open for 60 s past its last command
    (ControlMaster), so a poll does not pay a key exchange per command."""

    user_host: str
    key_path: Path
    known_hosts_path: Path
    port: int = 22
    slurm_conf: str | None = None
    control_dir: Path | None = None
    connect_timeout_s: int = 5

    def argv(self, argv: Sequence[str]) -> list[str]:
        """The local ssh command that runs `argv` on the login node."""
        remote = ["env", f"SLURM_CONF={self.slurm_conf}", *argv] if self.slurm_conf else list(argv)
        return [
            "ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={self.known_hosts_path}", "-o", "GlobalKnownHostsFile=none",
            "-o", f"ConnectTimeout={self.connect_timeout_s}", "-o", "IdentitiesOnly=yes",
            "-o", "LogLevel=ERROR",
            "-i", str(self.key_path), "-p", str(self.port), *self._control(),
            self.user_host, "--", shlex.join(remote),
        ]  # fmt: skip

    def __call__(
        self, argv: Sequence[str], *, input_text: str | None = None, timeout_s: float
    ) -> CommandResult:
        try:
            done = subprocess.run(
                self.argv(argv), input=input_text or "", capture_output=True, text=True,
                timeout=timeout_s, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            raise CommandTimedOut(
                f"{argv[0]} on {self.user_host} did not answer within {timeout_s:g} s"
            ) from exc
        if done.returncode == SSH_FAILED:
            raise _failure(f"{self.user_host}:{self.port}", self.known_hosts_path, done.stderr)
        return CommandResult(tuple(argv), done.returncode, done.stdout, done.stderr)

    def _control(self) -> list[str]:
        if self.control_dir is None or not control_dir_fits(self.control_dir):
            return []
        return [
            "-o", "ControlMaster=auto", "-o", "ControlPersist=60",
            "-o", f"ControlPath={self.control_dir}/%C",
        ]  # fmt: skip


def control_dir_fits(control_dir: Path) -> bool:
    """Whether a control socket under `control_dir` fits a unix socket's path (else: none)."""
    return len(str(control_dir).encode()) + 1 + _CONTROL_NAME_LEN <= _SOCKET_PATH_MAX


def _failure(login_node: str, known_hosts: Path, stderr: str) -> LoginNodeUnreachable:
    said = "; ".join(line.strip() for line in stderr.splitlines() if line.strip()) or "no message"
    if any(words in stderr for words in _HOST_KEY_WORDS):
        return HostKeyRejected(
            f"the login node {login_node} did not show the host key that {known_hosts} holds "
            f"for it (StrictHostKeyChecking; ssh: {said})"
        )
    if "Permission denied" in stderr:
        return KeyRefused(f"the login node {login_node} refused the key (ssh: {said})")
    return LoginNodeUnreachable(
        f"login node {login_node} did not answer over ssh ({_last_words(stderr)})"
    )


def _last_words(stderr: str) -> str:
    """ssh's reason without its preamble: "ssh: connect to host h port 22: Connection refused"
    says "Connection refused" (the host and port are in the sentence already)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1].rsplit(": ", 1)[-1] if lines else "no message from ssh"
