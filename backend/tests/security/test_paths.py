"""safe_join: nothing a request writes as a path leaves its base directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudeck.core.paths import UnsafePath, safe_join

ATTACKS = [
    "..",
    "../x",
    "a/../../x",
    "/etc/passwd",
    "//etc/passwd",
    "a\\..\\..\\x",
    "C:/x",
    "C:x",
    "%2e%2e/x",
    "%2e%2e%2fx",
    "..%2fx",
    "%252e%252e%252fx",
    "a/%2E%2E/%2E%2E/x",
    "x\x00.npy",
    "",
    "..\\x",
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_attacks_are_refused(tmp_path: Path, attack: str) -> None:
    with pytest.raises(UnsafePath):
        safe_join(tmp_path, attack)


def test_plain_names_resolve_inside(tmp_path: Path) -> None:
    assert safe_join(tmp_path, "a.npy") == tmp_path.resolve() / "a.npy"
    assert safe_join(tmp_path, "sub/b.npy") == tmp_path.resolve() / "sub" / "b.npy"


def test_symlinks_out_are_refused(tmp_path: Path) -> None:
    base, outside = tmp_path / "base", tmp_path / "outside"
    base.mkdir()
    outside.mkdir()
    os.symlink(outside, base / "dir")
    os.symlink(outside / "f.npy", base / "f.npy")
    os.symlink(base / "in.npy", base / "alias.npy")
    for name in ("dir/x.npy", "f.npy"):
        with pytest.raises(UnsafePath):
            safe_join(base, name)
    assert safe_join(base, "alias.npy") == base.resolve() / "in.npy"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("./\\%2eEfF0a\x00:C"), max_size=24))
def test_never_outside(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    base = tmp_path_factory.getbasetemp() / "prop"
    base.mkdir(exist_ok=True)
    try:
        joined = safe_join(base, text)
    except UnsafePath:
        return
    assert joined == base.resolve() or joined.is_relative_to(base.resolve())
