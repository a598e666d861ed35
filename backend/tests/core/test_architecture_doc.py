"""docs/architecture.md's package table and contract list are the code's, not a memory of it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import grimp
import pytest

import gpudeck

BACKEND = Path(__file__).resolve().parents[2]
DOC = BACKEND.parent / "docs" / "architecture.md"
ROOT = "gpudeck"
NOTHING = "nothing of ours"


def _name(cell: str) -> str:
    """`core/` -> core, `main.py` -> main."""
    return cell.strip().strip("`").removesuffix("/").removesuffix(".py")


def documented_imports(text: str) -> dict[str, set[str]]:
    """The package table: row name -> the packages its `imports` column names."""
    section = text.split("## Packages (backend/gpudeck)", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    table = {}
    for row in rows:
        name, _job, imports = (c.strip() for c in row.strip("|").split("|"))
        named = set(re.findall(r"`([^`]+)`", imports))
        assert named or imports == NOTHING, f"{name}: name packages in backticks, or {NOTHING!r}"
        table[_name(name)] = named
    return table


def real_imports() -> dict[str, set[str]]:
    """Each top-level package or module of gpudeck -> the others it imports (any depth)."""
    graph = grimp.build_graph(ROOT)
    out: dict[str, set[str]] = {}
    for module in graph.modules:
        if module == ROOT:
            continue
        top = module.split(".")[1]
        out.setdefault(top, set())  # every package gets a row, even one that imports nothing
        for imported in graph.find_modules_directly_imported_by(module):
            if imported != ROOT and (other := imported.split(".")[1]) != top:
                out[top].add(other)
    return dict(out)


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text()


def test_the_checked_code_is_this_checkout() -> None:
    # The table is compared with whichever gpudeck is imported: it must be the one beside it.
    assert Path(gpudeck.__file__).resolve().is_relative_to(BACKEND), gpudeck.__file__


def test_the_package_table_lists_exactly_the_imports_the_code_has(doc: str) -> None:
    table, real = documented_imports(doc), real_imports()
    assert sorted(table) == sorted(real), "one row per top-level package/module of gpudeck"
    for package in sorted(real):
        undocumented = real[package] - table[package]
        stale = table[package] - real[package]
        assert not undocumented, f"{package} imports {sorted(undocumented)}: not in the table"
        assert not stale, f"the table says {package} imports {sorted(stale)}; it does not"


def test_every_import_contract_is_described(doc: str) -> None:
    config = tomllib.loads((BACKEND / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    assert contracts
    for contract in contracts:
        assert f"**{contract['name']}**" in doc, contract["name"]


def test_the_table_is_read_row_by_row() -> None:
    text = (
        "## Packages (backend/gpudeck)\n\n| package | job | imports |\n|---|---|---|\n"
        "| `core/` | settings | nothing of ours |\n"
        "| `main.py` | the app | `api`, `core` (settings) |\n\n## Next\n| `x/` | y | `z` |\n"
    )
    assert documented_imports(text) == {"core": set(), "main": {"api", "core"}}


def documented_groups(text: str) -> dict[str, set[str]]:
    """The service-group table: group -> the groups its `uses` column names."""
    section = text.split("### Service groups (`services/`)", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    table = {}
    for row in rows:
        name, _job, uses = (c.strip() for c in row.strip("|").split("|"))
        table[_name(name)] = set(re.findall(r"`([^`]+)`", uses))
    return table


def real_group_imports() -> dict[str, set[str]]:
    """Each group (or top-level module but `errors`) of gpudeck.services -> the groups it
    imports. `errors` is everyone's: not a row."""
    graph = grimp.build_graph(ROOT)
    prefix = f"{ROOT}.services."
    out: dict[str, set[str]] = {}
    for module in graph.modules:
        if not module.startswith(prefix) or (group := module.split(".")[2]) == "errors":
            continue
        out.setdefault(group, set())
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.startswith(prefix):
                other = imported.split(".")[2]
                if other not in (group, "errors"):
                    out[group].add(other)
    return out


def test_the_service_group_table_lists_exactly_the_imports_the_groups_have(doc: str) -> None:
    table, real = documented_groups(doc), real_group_imports()
    assert sorted(table) == sorted(real), "one row per group of services/ (errors.py aside)"
    for group in sorted(real):
        assert table[group] == real[group], (group, sorted(table[group]), sorted(real[group]))
