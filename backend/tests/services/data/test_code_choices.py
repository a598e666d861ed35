"""What a script job's entry point may pick (services/data/code_choices.py): the .py files under
the code roots, each by its path relative to its root and naming that root; links, dot names,
other files and roots that are not directories are left out; at most MAX_ITEMS."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudeck.services.data import code_choices
from gpudeck.services.data.code_choices import list_code


def _file(path: Path, text: str = "print('hi')\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_py_files_under_each_root_by_their_path_in_it(tmp_path: Path) -> None:
    first, second = tmp_path / "code", tmp_path / "more"
    _file(first / "train.py", "x = 1\n")
    _file(first / "pkg" / "run.py")
    _file(first / "README.md")
    _file(second / "eval.py")
    found = list_code([first, second, tmp_path / "missing"])
    assert [(c.value, c.root) for c in found] == [
        ("train.py", str(first)),
        ("pkg/run.py", str(first)),
        ("eval.py", str(second)),
    ]
    assert found[0].size_bytes == len("x = 1\n") and found[0].detail == f"in {first}"


def test_links_and_dot_names_are_left_out(tmp_path: Path) -> None:
    root = tmp_path / "code"
    outside = _file(tmp_path / "elsewhere" / "secret.py")
    _file(root / "ok.py")
    _file(root / ".hidden.py")
    _file(root / ".venv" / "lib.py")
    (root / "linked.py").symlink_to(outside)
    (root / "linked_dir").symlink_to(outside.parent, target_is_directory=True)
    assert [c.value for c in list_code([root])] == ["ok.py"]


def test_at_most_max_items(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "code"
    for i in range(5):
        _file(root / f"m{i}.py")
    monkeypatch.setattr(code_choices, "MAX_ITEMS", 3)
    assert [c.value for c in list_code([root])] == ["m0.py", "m1.py", "m2.py"]
