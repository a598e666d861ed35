"""What a script job's entry point may pick: the .py files under the server's code roots
(GPUDECK_SCRIPT_CODE_ROOTS), each by its path relative to its root, as the entrypoint check
resolves it, and the root it lies under. Links are not followed; dot names are skipped."""

from __future__ import annotations

from pathlib import Path

from gpudeck.services.data.choices import MAX_ITEMS, DataChoice, walk_tree


def list_code(roots: list[Path]) -> list[DataChoice]:
    found: list[DataChoice] = []
    for root in roots:
        if not root.is_dir():
            continue
        for here, _, files in walk_tree(root):
            for name in files:
                path = here / name
                if not name.endswith(".py") or path.is_symlink():
                    continue
                value = path.relative_to(root).as_posix()
                found.append(DataChoice(value, path.stat().st_size, None, f"in {root}", str(root)))
                if len(found) >= MAX_ITEMS:
                    return found
    return found
