"""What a script job may run, by the server's settings: an entrypoint under a code root, a
configured interpreter, environment names from the allow-list. Called at submit (a refusal
is a 422 naming the field) and again at launch (the files may have changed since)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from gpudeck.core.config import NO_CODE_ROOT, Settings, get_settings
from gpudeck.engine.kinds import InputError
from gpudeck.kinds.script.config import ScriptConfig

# Set by GPUDeck itself: a job cannot choose them.
RESERVED_ENV_PREFIXES = ("GPUDECK_", "TORCHELASTIC_", "CUDA_")


def resolve_entrypoint(entrypoint: str, roots: list[Path]) -> tuple[Path, Path]:
    """(the file, its code root), both resolved; symlinks are followed before the check."""
    path = PurePosixPath(entrypoint)
    if ".." in path.parts:
        raise InputError("entrypoint", "'..' is not allowed in the path")
    if path.suffix != ".py":
        raise InputError("entrypoint", "must be a .py file")
    if not roots:
        raise InputError("entrypoint", NO_CODE_ROOT)
    resolved_roots = [root.resolve() for root in roots]
    candidates = [Path(path)] if path.is_absolute() else [root / path for root in resolved_roots]
    for candidate in candidates:
        real = candidate.resolve()
        root = next((r for r in resolved_roots if real.is_relative_to(r)), None)
        if root is None:
            raise InputError("entrypoint", "is outside the code roots")
        if real.is_file():
            return real, root
    raise InputError("entrypoint", "no such file under the code roots")


def resolve_module(module: str, roots: list[Path]) -> tuple[Path, Path]:
    """(the module's file, its code root): `-m pkg.mod` runs pkg/mod.py, or pkg/mod/__main__.py
    for a package, found under a code root (symlinks followed before the check). A module that
    is not there (`timeit`, `cProfile`: the interpreter's own, which run any code they are
    given) is refused: a script job runs code from the code roots only."""
    if not roots:
        raise InputError("module", NO_CODE_ROOT)
    parts = module.split(".")
    for root in (r.resolve() for r in roots):
        base = root.joinpath(*parts)
        for candidate in (base.with_name(base.name + ".py"), base / "__main__.py"):
            real = candidate.resolve()
            if real.is_file() and real.is_relative_to(root):
                return real, root
    raise InputError(
        "module", f"no module {module!r} under the code roots (as pkg/mod.py or pkg/__main__.py)"
    )


def code_root(config: ScriptConfig, settings: Settings) -> Path:
    """The directory the job runs in: the root holding its entrypoint or its module (so that
    `-m` finds the module checked here before any other of that name)."""
    if config.entrypoint is not None:
        return resolve_entrypoint(config.entrypoint, settings.code_roots)[1]
    return resolve_module(str(config.module), settings.code_roots)[1]


def interpreter(config: ScriptConfig, settings: Settings) -> str:
    known = settings.interpreters
    if config.python not in known:
        raise InputError("python", f"unknown interpreter; configured: {', '.join(sorted(known))}")
    return known[config.python]


def check_env(config: ScriptConfig, settings: Settings) -> None:
    allowed = settings.env_allowlist
    for name in config.env:
        if name.startswith(RESERVED_ENV_PREFIXES) or name not in allowed:
            raise InputError(f"env.{name}", "not in the server's allow-list of variable names")


def host_memory(config: ScriptConfig, settings: Settings) -> int:
    """The job's host memory limit: what it asked for, at most the server's."""
    most = settings.host_memory_max_bytes
    if config.host_memory_bytes is None:
        return most
    if config.host_memory_bytes > most:
        raise InputError("host_memory_bytes", f"more than this server allows ({most} bytes)")
    return config.host_memory_bytes


def check_inputs(config: ScriptConfig, data_dir: Path, settings: Settings | None = None) -> None:
    settings = settings or get_settings()
    code_root(config, settings)
    interpreter(config, settings)
    check_env(config, settings)
    host_memory(config, settings)
