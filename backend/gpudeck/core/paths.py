"""`safe_join`: the one way a path from a request becomes a path on disk."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath, PureWindowsPath
from urllib.parse import unquote

_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}")


class UnsafePath(ValueError):
    """The path would leave its base directory, or is written so that it might."""


def _check_text(path: str) -> None:
    if not path or "\x00" in path:
        raise UnsafePath("empty path or NUL byte")
    if "\\" in path or PureWindowsPath(path).drive:
        raise UnsafePath("backslashes and drive letters are not allowed")
    if path.startswith("/") or PurePosixPath(path).is_absolute():
        raise UnsafePath("absolute paths are not allowed")
    if ".." in path.split("/"):
        raise UnsafePath("'..' is not allowed")


def safe_join(base: Path, user_path: str) -> Path:
    """`base / user_path`, resolved, or UnsafePath.

    Refuses NUL, absolute paths, '..', backslashes, percent-encoded forms of any of these (the
    text is decoded once and checked again; anything still encoded after that is refused), and
    symlinks that resolve outside `base`."""
    _check_text(user_path)
    decoded = unquote(user_path)
    if decoded != user_path:
        _check_text(decoded)
        if _ENCODED.search(decoded):
            raise UnsafePath("doubly encoded paths are not allowed")
    root = base.resolve()
    target = (root / user_path).resolve()
    if target != root and not target.is_relative_to(root):
        raise UnsafePath("the path resolves outside its directory")
    return target
