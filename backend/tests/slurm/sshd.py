"""A real OpenSSH server on 127.0.0.1 as the test cluster's login node (`access: ssh`).

sshd runs as root from a temporary directory: a fresh ed25519 host key, an authorized_keys file
holding a fresh client key, and a known_hosts file naming the host key for [127.0.0.1]:<port>.
Slurm's commands over it reach the same test cluster as the local runner (SLURM_CONF names its
slurm.conf). `pause()` stops the listener and every connection's process (a frozen login node);
`stop()` ends them all and removes the directory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from harness import free_port, reachable

SSHD = "/usr/sbin/sshd"
START_TIMEOUT_S = 10.0


def missing() -> str | None:
    if not Path(SSHD).exists() or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "OpenSSH is not installed (sshd, ssh, ssh-keygen): `make system-deps` installs it"
    if os.geteuid() != 0:
        return "the test login node's sshd runs as root"
    return None


@dataclass
class LoginNode:
    root: Path
    port: int
    process: subprocess.Popen[bytes] | None = None
    paused: list[int] = field(default_factory=list)

    @property
    def user_host(self) -> str:
        return "root@127.0.0.1"

    @property
    def client_key(self) -> Path:
        return self.root / "client" / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.root / "client" / "known_hosts"

    @property
    def control_dir(self) -> Path:
        return self.root / "control"

    def start(self) -> None:
        (self.root / "host").mkdir(mode=0o700, parents=True)
        (self.root / "client").mkdir(mode=0o700)
        self.control_dir.mkdir(mode=0o700)
        host_key = self.root / "host" / "ssh_host_ed25519_key"
        _keygen(host_key)
        _keygen(self.client_key)
        authorized = self.root / "host" / "authorized_keys"
        authorized.write_text(self.client_key.with_suffix(".pub").read_text())
        authorized.chmod(0o600)
        public = host_key.with_suffix(".pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {public[0]} {public[1]}\n")
        config = self.root / "host" / "sshd_config"
        config.write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
            f"AuthorizedKeysFile {authorized}\nPidFile {self.root / 'host' / 'sshd.pid'}\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            "MaxStartups 100\nMaxSessions 100\nLogLevel ERROR\n"
            # Debian's bash sources ~/.bashrc for a command over ssh unless SHLVL says it is a
            # nested shell: root's here runs `pyenv init`, whose rehash waits up to 60 s on a
            # lock that a command killed at its timeout leaves behind.
            "SetEnv SHLVL=1\n"
        )
        self.launch()

    def launch(self) -> None:
        """sshd, from the files start() wrote (again after stop(): the same host key)."""
        config = self.root / "host" / "sshd_config"
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation
        self.process = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL,
            stdout=(self.root / "sshd.log").open("ab"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while not reachable(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"sshd did not start: {self.log()}")
            time.sleep(0.05)

    def log(self) -> str:
        return (self.root / "sshd.log").read_text(errors="replace")[-2000:]

    def processes(self) -> list[int]:
        """The listener and every process under it (each connection's sshd and its commands:
        a connection's sshd leaves the listener's process group, not its tree)."""
        if self.process is None:
            return []
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    stat = (entry / "stat").read_text()
                    ppid = int(stat.rsplit(")", 1)[1].split()[1])
                    children.setdefault(ppid, []).append(int(entry.name))
        found, todo = [], [self.process.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo.extend(children.get(pid, []))
        return found

    def pause(self) -> None:
        """The login node frozen: nothing of sshd answers, open connections included."""
        self.paused = self.processes()
        for pid in self.paused:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)

    def resume(self) -> None:
        for pid in self.paused:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        self.paused = []

    def stop(self) -> None:
        """sshd and every connection ended (a dead login node); launch() brings it back."""
        if self.process is not None:
            self.resume()
            for pid in reversed(self.processes()):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self.process.wait(timeout=10)
            self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gpudeck-test", "-f", str(path)],
        check=True, capture_output=True,
    )  # fmt: skip


@contextlib.contextmanager
def running_login_node() -> Iterator[LoginNode]:
    """A login node, stopped and removed after (a module fixture wraps it: the test cluster's
    fixtures live in conftest.py, which another change owns)."""
    if why := missing():
        pytest.skip(why)
    # A short root: a control socket's path holds at most 107 bytes.
    node = LoginNode(Path(tempfile.mkdtemp(prefix="gd-ssh-", dir="/tmp")), free_port())
    try:
        node.start()
        yield node
    finally:
        node.close()
