"""The command a script job runs: the real torchrun, from the configured interpreter.

    <python> -m torch.distributed.run --nnodes 1 --nproc-per-node N
        --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:<free port> --rdzv-id gpudeck-<job>
    (across nodes: --nnodes K --node-rank R --master-addr <first node> --master-port <port>)
        --max-restarts R --log-dir <run_dir>/torchrun --redirects 3
        (<entrypoint> | --module <module>) <args...>

An argument list: nothing passes through a shell. The environment is built from scratch (a
few harmless variables of the worker's, never its GPUDECK_* settings or credentials), then
the job's allowed variables, then what GPUDeck gives every script.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, NoReturn

import gpudeck
from gpudeck.core.config import get_settings
from gpudeck.engine.command import CommandSpec
from gpudeck.engine.command_output import CommandFiles
from gpudeck.engine.contract import JobLaunch
from gpudeck.kinds.script.checks import (
    check_env,
    code_root,
    host_memory,
    interpreter,
    resolve_entrypoint,
)
from gpudeck.kinds.script.config import ScriptConfig

# The last three: the operator's choice of network interface for collectives across nodes
# (docs/operations.md): a node with several interfaces must name the one its peers reach.
INHERITED_ENV = (
    *("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"),
    *("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "TP_SOCKET_IFNAME"),
)


def no_rank_entry(ctx: Any, config: Any) -> NoReturn:
    raise RuntimeError("script jobs run through torchrun (JobKind.command), not in a rank")


def _sdk_dir(run_dir: Path) -> Path:
    """A directory holding only `gpudeck/__init__.py` (stdlib-only: `gpudeck.report`), first
    on the script's PYTHONPATH, so any interpreter can `import gpudeck`."""
    target = run_dir / "python" / "gpudeck"
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(str(gpudeck.__file__), target / "__init__.py")
    return target.parent


def files_of(launch: JobLaunch) -> CommandFiles:
    run_dir = Path(launch.run_dir)
    return CommandFiles(
        run_dir=run_dir,
        log_dir=run_dir / "torchrun",
        metrics_file=run_dir / "metrics.jsonl",
        error_file=run_dir / "error.json",
        checkpoint_dir=Path(launch.checkpoint_dir),
        output_file=run_dir / "torchrun.log",
        rank_offset=launch.rank_offset,
    )


def environment(launch: JobLaunch, config: ScriptConfig, files: CommandFiles) -> dict[str, str]:
    env = {name: os.environ[name] for name in INHERITED_ENV if name in os.environ}
    env.update(config.env)
    sdk = str(_sdk_dir(files.run_dir))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [sdk, config.env.get("PYTHONPATH")]))
    visible = ",".join(str(i) for i in launch.device_indices)
    env.update(
        {
            "GPUDECK_JOB_ID": str(launch.job_id),
            "GPUDECK_CHECKPOINT_DIR": str(files.checkpoint_dir),
            "GPUDECK_METRICS_FILE": str(files.metrics_file),
            "TORCHELASTIC_ERROR_FILE": str(files.error_file),
            "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
            # Simulated devices run on CPU: the script must see no GPU at all.
            "CUDA_VISIBLE_DEVICES": visible if launch.device_type == "cuda" else "",
            "OMP_NUM_THREADS": str(launch.num_threads or 1),
            "PYTHONUNBUFFERED": "1",
        }
    )
    if launch.resume_from:
        env["GPUDECK_RESUME_DIR"] = launch.resume_from
    if launch.socket_ifname:  # across nodes: the interface the other nodes reach
        env["GLOO_SOCKET_IFNAME"] = env["NCCL_SOCKET_IFNAME"] = launch.socket_ifname
    return env


def build_command(launch: JobLaunch) -> CommandSpec:
    settings = get_settings()
    config = ScriptConfig.model_validate(launch.config)
    check_env(config, settings)  # again at launch: the settings may have changed
    root = code_root(config, settings)
    nprocs = launch.local_world_size * config.nproc_per_device
    files = files_of(launch)
    Path(files.checkpoint_dir).mkdir(parents=True, exist_ok=True)
    argv = [interpreter(config, settings), "-m", "torch.distributed.run"]
    argv += ["--nnodes", str(launch.nnodes), "--nproc-per-node", str(nprocs)]
    if launch.nnodes > 1:
        # Across nodes: torchrun's static rendezvous on the first node's published address
        # and port, each node with the rank GPUDeck gave it (its ranks follow the nodes').
        argv += ["--node-rank", str(launch.node_rank)]
        argv += ["--master-addr", launch.master_addr, "--master-port", str(launch.master_port)]
    else:
        argv += ["--rdzv-backend", "c10d", "--rdzv-id", launch.run_id]
        argv += ["--rdzv-endpoint", f"{launch.master_addr}:{launch.master_port}"]
    argv += ["--max-restarts", str(config.max_restarts)]
    argv += ["--log-dir", str(files.log_dir), "--redirects", "3"]
    if config.entrypoint is not None:
        argv.append(str(resolve_entrypoint(config.entrypoint, settings.code_roots)[0]))
    else:
        argv += ["--module", str(config.module)]
    argv += config.args
    env = environment(launch, config, files)
    limit = host_memory(config, settings)
    return CommandSpec(tuple(argv), env, str(root), files, nprocs, host_memory_bytes=limit)
