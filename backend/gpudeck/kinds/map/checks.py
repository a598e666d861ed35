"""Where a map function may come from, by the server's settings: a directory or `.py` file
under a code root (the roots script jobs use), holding the named module. Checked at submit (a
refusal is a 422 naming the field) and again in every rank (the files may have changed)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from gpudeck.core.config import NO_CODE_ROOT, Settings, get_settings
from gpudeck.engine.kinds import InputError
from gpudeck.engine.map.inputs import ItemsError, resolve_new_under, resolve_under
from gpudeck.kinds.map.config import MapFunctionConfig


def resolve_code(code: str | None, roots: list[Path]) -> Path:
    """The directory or .py file named by `code` (relative to a root, or absolute), resolved:
    symlinks are followed before the check that it lies under a root."""
    if not roots:
        raise InputError("code", NO_CODE_ROOT)
    resolved_roots = [root.resolve() for root in roots]
    if code is None:
        return resolved_roots[0]
    path = PurePosixPath(code)
    if ".." in path.parts:
        raise InputError("code", "'..' is not allowed in the path")
    candidates = [Path(path)] if path.is_absolute() else [r / path for r in resolved_roots]
    for candidate in candidates:
        real = candidate.resolve()
        if not any(real.is_relative_to(r) for r in resolved_roots):
            raise InputError("code", "is outside the code roots")
        if real.is_dir() or (real.is_file() and real.suffix == ".py"):
            return real
    raise InputError("code", "no such directory or .py file under the code roots")


def module_file(config: MapFunctionConfig, code: Path) -> Path:
    """The file that `config.function`'s module is loaded from, under `code`."""
    if code.is_file():
        if config.module_name != code.stem:
            raise InputError("function", f"the module must be {code.stem!r}, the file's name")
        return code
    parts = config.module_name.split(".")
    for candidate in (
        code.joinpath(*parts).with_suffix(".py"),
        code.joinpath(*parts, "__init__.py"),
    ):
        if candidate.is_file() and candidate.resolve().is_relative_to(code):
            return candidate
    raise InputError("function", f"no module {config.module_name!r} under the code directory")


def check_inputs(
    config: MapFunctionConfig, data_dir: Path, settings: Settings | None = None
) -> None:
    settings = settings or get_settings()
    module_file(config, resolve_code(config.code, settings.code_roots))
    if config.map.batch_size == "auto":
        raise InputError("map.batch_size", "a map function has no memory estimate: give a number")
    try:
        resolve_under(data_dir / "datasets", config.input)
    except ItemsError as exc:
        raise InputError("input", str(exc)) from None
    try:
        resolve_new_under(data_dir / "datasets", config.output)
    except ItemsError as exc:
        raise InputError("output", str(exc)) from None
