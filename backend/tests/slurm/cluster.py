"""A real Slurm 22.05 cluster of two GPU nodes on this one machine, for the adapter's tests.

    root namespace: munged, MariaDB (127.0.0.1), slurmdbd, slurmctld (bridge 10.232.N.1)
    node k:         a network namespace with its own slurmd (10.232.N.(2 + k)), two fake GPUs

Debian's slurmd is built without --enable-multiple-slurmd, so the two nodes are two hosts: one
network namespace each on a bridge (tests/e2e/netns.py). The GPUs are character devices made
with mknod (major 195, NVIDIA's) and listed in gres.conf with File=, so Slurm allocates them and
sets CUDA_VISIBLE_DEVICES and SLURM_JOB_GPUS as on a real cluster; nothing opens them.

sacct needs slurmdbd in 22.05: with AccountingStorageType=accounting_storage/none it answers
"Slurm accounting storage is disabled", and JobCompType=jobcomp/filetxt only writes a log that
no command reads (`sacct --completion` is gone). slurmdbd stores into MySQL/MariaDB, so the
harness starts a throwaway `mariadbd` on an empty data directory with --skip-grant-tables
(0.4 s; mariadb-install-db would take 5 s and the grant tables are not needed by slurmdbd).

Everything lives under one temporary directory and is torn down by `stop()`: each daemon is a
process group of ours, and every process left in a node's namespace (slurmstepd, job steps) is
killed before the namespace is deleted.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from e2e import netns
from harness import free_port, reachable

BINARIES = ("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd", "sbatch", "sacct")
NODES = ("n1", "n2")
GPUS_PER_NODE = 2
GPU_TYPE = "h100"
PARTITION = "gpu"
# A second partition with a time limit (minutes, as Slurm keeps them), for limit checks.
SHORT_PARTITION, SHORT_MAX_MINUTES = "short", 5
MAX_ARRAY_SIZE = 1001
CLUSTER_NAME = "gpudeck-test"
NVIDIA_MAJOR = 195
START_TIMEOUT_S = 30.0


def missing_binaries() -> str | None:
    """None when every daemon and command is installed, else which are not."""
    missing = [
        b for b in BINARIES if shutil.which(b) is None and not Path(f"/usr/sbin/{b}").exists()
    ]
    if not missing:
        return None
    return f"Slurm is not installed ({', '.join(missing)} missing): `make system-deps` installs it"


def _binary(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


@dataclass
class Daemon:
    """One daemon we started, as its own process group."""

    name: str
    argv: list[str]
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self, env: dict[str, str]) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env=env, start_new_session=True,
            )  # fmt: skip

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if self.alive():
            assert self.process is not None
            os.killpg(self.process.pid, sig)

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGCONT)  # a paused daemon cannot take SIGTERM
            os.killpg(self.process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # it, if it hung, and helpers it left
        self.process.wait()
        self.process = None

    def tail(self, lines: int = 15) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


@dataclass
class SlurmCluster:
    """The running cluster: `env` is what a Slurm command needs (SLURM_CONF) to reach it."""

    root: Path
    hosts: netns.Hosts
    ports: dict[str, int]
    daemons: dict[str, Daemon] = field(default_factory=dict)
    started_in_s: float = 0.0

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    @property
    def gpu_files(self) -> dict[str, list[Path]]:
        """Each node's fake GPU device files, in gres.conf's order."""
        return {
            node: [
                self.root / "dev" / f"nvidia{k * GPUS_PER_NODE + i}" for i in range(GPUS_PER_NODE)
            ]
            for k, node in enumerate(NODES)
        }

    def run(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        """A Slurm command against this cluster, as an admin at the login node would run it."""
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=30)

    def job_ids(self) -> set[str]:
        """Every job slurmctld still knows, ended ones too (until MinJobAge forgets them: a
        check that nothing was submitted compares with `<=`, not `==`)."""
        listed = self.run(["squeue", "--noheader", "--states=all", "-o", "%i"]).stdout
        return set(listed.split())

    def cancel_everything(self, timeout_s: float = 30.0) -> None:
        """No job of an earlier test left pending or running: the cluster is the test process's,
        and a forgotten job would hold its GPUs and cores through the tests after it."""
        self.run(["scancel", f"--user={getpass.getuser()}"])
        deadline = time.monotonic() + timeout_s
        while self.run(["squeue", "--noheader", "-o", "%i"]).stdout.strip():
            if time.monotonic() > deadline:
                raise RuntimeError(f"Slurm jobs still there {timeout_s:.0f} s after scancel")
            time.sleep(0.2)

    # -- logs, for a failed test's report ---------------------------------------------------

    def log_sizes(self) -> dict[str, int]:
        """Each daemon log's size now: where a test's own lines start in the shared logs."""
        return {log.name: log.stat().st_size for log in sorted((self.root / "log").glob("*.log"))}

    def keep_logs(self, dest: Path, since: dict[str, int], lines: int = 60) -> str:
        """Every daemon's log and output copied to `dest` (the cluster's root goes with `stop()`),
        and the last `lines` of what each log wrote after `since`, for the failure report."""
        shutil.copytree(self.root / "log", dest, dirs_exist_ok=True)
        said = []
        for log in sorted((self.root / "log").glob("*.log")):  # *.out: the same, untimed
            with log.open("rb") as read:
                read.seek(since.get(log.name, 0))
                new = read.read().decode(errors="replace").splitlines()[-lines:]
            if new:
                said.append(f"--- {log.name}\n" + "\n".join(new))
        return "\n".join(said)

    # -- the controller, for outage tests --------------------------------------------------

    def pause_controller(self) -> None:
        self.daemons["slurmctld"].signal(signal.SIGSTOP)

    def resume_controller(self) -> None:
        self.daemons["slurmctld"].signal(signal.SIGCONT)

    def stop_controller(self) -> None:
        self.daemons["slurmctld"].stop()

    def start_controller(self) -> None:
        """slurmctld again from its saved state (StateSaveLocation): jobs survive it. Each slurmd
        is restarted too (its jobs survive that as well): slurmctld 22.05 restored from state
        knows each node's GPU count but not which GPUs a job holds (GresUsed IDX:N/A) until
        the node registers again, and until then it leaves GPU jobs waiting on Resources."""
        self.daemons["slurmctld"].start(self.env)
        self._wait(lambda: self._command_ok(["scontrol", "ping"]), "slurmctld")
        for node in NODES:
            self.daemons[node].stop()
            self.daemons[node].start(self.env)
        self._wait(self._nodes_up, "the nodes to register again")

    # -- start and stop --------------------------------------------------------------------

    def start(self) -> None:
        began = time.monotonic()
        self.hosts.up()
        self._make_gpus()
        self._write_config()
        order = ("munged", "mariadbd", "slurmdbd", "slurmctld", *NODES)
        ready = {
            "munged": lambda: (self.root / "munge" / "munge.socket").exists(),
            "mariadbd": lambda: reachable(self.ports["mysql"]),
            "slurmdbd": lambda: reachable(self.ports["slurmdbd"]),
            "slurmctld": lambda: self._command_ok(["scontrol", "ping"]),
        }
        for name in order:
            self.daemons[name] = Daemon(name, self._argv(name), self.root / "log" / f"{name}.out")
            self.daemons[name].start(self.env)
            if name in ready:
                self._wait(ready[name], name)
        self._wait(self._nodes_idle, "the nodes to register")
        self.started_in_s = time.monotonic() - began

    def stop(self) -> None:
        for node in NODES:  # slurmd first, then whatever it left in the node's namespace
            if node in self.daemons:
                self.daemons[node].stop()
            self._kill_namespace(node)
        for name in ("slurmctld", "slurmdbd", "mariadbd", "munged"):
            if name in self.daemons:
                self.daemons[name].stop()
        self.hosts.down()
        shutil.rmtree(self.root, ignore_errors=True)

    def _kill_namespace(self, node: str) -> None:
        namespace = self.hosts.namespace.get(node)
        if namespace is None:
            return
        for _ in range(50):
            listed = subprocess.run(
                ["ip", "netns", "pids", namespace], capture_output=True, text=True, check=False
            )
            pids = [int(p) for p in listed.stdout.split()]
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        raise RuntimeError(f"processes left in {namespace}: {pids}")

    def _wait(self, ready: object, what: str) -> None:
        assert callable(ready)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():
            dead = [d for d in self.daemons.values() if not d.alive()]
            if dead or time.monotonic() > deadline:
                logs = "\n".join(f"--- {d.name}\n{d.tail()}" for d in self.daemons.values())
                raise RuntimeError(f"Slurm test cluster: waited for {what} in vain\n{logs}")
            time.sleep(0.1)

    def _command_ok(self, argv: list[str]) -> bool:
        done = subprocess.run(argv, env=self.env, capture_output=True, timeout=30, check=False)
        return done.returncode == 0

    def _node_states(self) -> dict[str, str]:
        done = subprocess.run(
            ["sinfo", "--noheader", "--Node", "--format=%N %t"],
            env=self.env, capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        return dict(line.split() for line in done.stdout.splitlines() if line.strip())

    def _nodes_idle(self) -> bool:
        return all(self._node_states().get(node) == "idle" for node in NODES)

    def _nodes_up(self) -> bool:
        states = self._node_states()
        return all(states.get(node) in ("idle", "mix", "alloc") for node in NODES)

    # -- files -----------------------------------------------------------------------------

    def _make_gpus(self) -> None:
        (self.root / "dev").mkdir()
        for k, files in enumerate(self.gpu_files.values()):
            for i, path in enumerate(files):
                os.mknod(path, 0o600 | 0o020000, os.makedev(NVIDIA_MAJOR, k * GPUS_PER_NODE + i))

    def _write_config(self) -> None:
        for sub in ("etc", "log", "state", "munge", "mysql", "run", *(f"spool/{n}" for n in NODES)):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        etc = self.root / "etc"
        self.conf.write_text(self._slurm_conf())
        (etc / "gres.conf").write_text(self._gres_conf())
        # Read only by the cgroup plugins, which this cluster does not load (proctrack/linuxproc,
        # task/none: a container's cgroup tree is not ours to divide); kept so slurmd finds it.
        (etc / "cgroup.conf").write_text("CgroupPlugin=autodetect\nConstrainDevices=no\n")
        dbd = etc / "slurmdbd.conf"
        dbd.write_text(self._slurmdbd_conf())
        dbd.chmod(0o600)  # slurmdbd refuses a readable one: it may hold the database password

    def _slurm_conf(self) -> str:
        r, p = self.root, self.ports
        nodes = "\n".join(
            f"NodeName={node} NodeAddr={self.hosts.address[node]} CPUs=4 RealMemory=4096 "
            f"Gres=gpu:{GPU_TYPE}:{GPUS_PER_NODE} State=UNKNOWN"
            for node in NODES
        )
        return f"""\
ClusterName={CLUSTER_NAME}
SlurmctldHost={socket.gethostname().split(".")[0]}({self.hosts.gateway})
SlurmctldPort={p["slurmctld"]}
SlurmdPort={p["slurmd"]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={r}/munge/munge.socket
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool/%n
SlurmctldPidFile={r}/run/slurmctld.pid
SlurmdPidFile={r}/run/slurmd.%n.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
# CPUs and memory as configured, whatever this machine has: two cores run both nodes.
SlurmdParameters=config_overrides
GresTypes=gpu
MaxArraySize={MAX_ARRAY_SIZE}
DefMemPerCPU=64
# Short grace periods: a cancelled or timed-out test job is gone in seconds, not 30.
KillWait=2
MessageTimeout=5
# Ended jobs leave squeue within ~10 s (purged every max(10, MinJobAge) s): sacct's turn.
MinJobAge=2
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={p["slurmdbd"]}
# The munge socket for slurmdbd (AuthInfo is not read for it).
AccountingStoragePass={r}/munge/munge.socket
# GPUs in sacct's AllocTRES; the job's comment (gpudeck:<id>) in sacct's Comment.
AccountingStorageTRES=gres/gpu,gres/gpu:{GPU_TYPE}
AccountingStoreFlags=job_comment
{nodes}
PartitionName={PARTITION} Nodes={",".join(NODES)} Default=YES MaxTime=INFINITE State=UP
PartitionName={SHORT_PARTITION} Nodes={",".join(NODES)} MaxTime={SHORT_MAX_MINUTES} State=UP
"""

    def _gres_conf(self) -> str:
        lines = []
        for node, files in self.gpu_files.items():
            first, last = (f.name.removeprefix("nvidia") for f in (files[0], files[-1]))
            path = files[0].parent / f"nvidia[{first}-{last}]"
            lines.append(f"NodeName={node} Name=gpu Type={GPU_TYPE} File={path}")
        return "\n".join(lines) + "\n"

    def _slurmdbd_conf(self) -> str:
        r, p = self.root, self.ports
        return f"""\
AuthType=auth/munge
AuthInfo=socket={r}/munge/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={p["slurmdbd"]}
SlurmUser=root
PidFile={r}/run/slurmdbd.pid
LogFile={r}/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={p["mysql"]}
StorageUser=root
StorageLoc=slurm_acct_db
"""

    def _argv(self, name: str) -> list[str]:
        r = self.root
        if name == "munged":
            return [
                _binary("munged"), "--foreground", "--force",
                f"--key-file={r}/munge/munge.key", f"--socket={r}/munge/munge.socket",
                f"--pid-file={r}/munge/munged.pid", f"--seed-file={r}/munge/munge.seed",
                f"--log-file={r}/log/munged.log",
            ]  # fmt: skip
        if name == "mariadbd":
            return [
                _binary("mariadbd"), "--no-defaults", "--user=root", f"--datadir={r}/mysql",
                f"--socket={r}/mysql/mysql.sock", f"--pid-file={r}/mysql/mysql.pid",
                "--bind-address=127.0.0.1", f"--port={self.ports['mysql']}",
                "--skip-grant-tables", "--skip-name-resolve",
                "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=4M",
                "--innodb-data-file-path=ibdata1:4M:autoextend",
            ]  # fmt: skip
        if name == "slurmdbd":
            return [_binary("slurmdbd"), "-D"]
        if name == "slurmctld":
            return [_binary("slurmctld"), "-D", "-i", "-f", str(self.conf)]
        # nsenter joins the node's network namespace alone; `ip netns exec` would also give it a
        # fresh /sys without the cgroup mounts slurmd 22.05 reads at start whatever its plugins.
        namespace = f"--net=/run/netns/{self.hosts.namespace[name]}"
        return ["nsenter", namespace, _binary("slurmd"), "-D", "-N", name, "-f", str(self.conf)]


def start_cluster() -> SlurmCluster:
    """A fresh cluster under a new temporary directory; the caller must `stop()` it."""
    pid = os.getpid()
    hosts = netns.Hosts(names=list(NODES), network="10.232", tag=f"gs{pid % 100000}")
    ports = {name: free_port() for name in ("slurmctld", "slurmd", "slurmdbd", "mysql")}
    cluster = SlurmCluster(Path(tempfile.mkdtemp(prefix="gpudeck-slurm-")), hosts, ports)
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster
