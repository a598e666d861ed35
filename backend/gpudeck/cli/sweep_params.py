"""`gpudeck sweep submit`'s parameter options read into the API's `parameters`
(schemas/sweeps.SweepParameters). A mistake is one line naming the option, and exit 2."""

from __future__ import annotations

import json
from typing import Any, NoReturn

import typer

from gpudeck.cli.http import err_console

BOUNDED = ("uniform", "log_uniform", "int")
RANDOM_FORMS = "path=uniform|log_uniform|int:LOW:HIGH or path=choice:v1,v2,..."


def refuse(flag: str, message: str) -> NoReturn:
    err_console.print(f"[red]{flag}[/red] {message}")
    raise typer.Exit(2)


def parse_value(text: str) -> Any:
    """`8` is a number, `true` a bool, `topk` a string: JSON when it reads as JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def split_values(text: str) -> list[str]:
    """`8,16,[1,2]` -> ["8", "16", "[1,2]"]: commas inside brackets, braces or quotes are
    part of a value (a JSON list or object is one value)."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, char in enumerate(text):
        if char == '"' and text[i - 1 : i] != "\\":
            quoted = not quoted
        elif not quoted and char in "[{":
            depth += 1
        elif not quoted and char in "]}":
            depth -= 1
        elif char == "," and depth == 0 and not quoted:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def _split(option: str, flag: str, form: str) -> tuple[str, str]:
    path, sep, rest = option.partition("=")
    if not sep or not path or not rest:
        refuse(flag, f"takes {form}: not {option!r}")
    return path, rest


def parse_lists(options: list[str], flag: str) -> dict[str, list[Any]]:
    """`k=8,16,32` -> {"k": [8, 16, 32]}."""
    out: dict[str, list[Any]] = {}
    for option in options:
        path, values = _split(option, flag, "path=v1,v2,...")
        out[path] = [parse_value(v) for v in split_values(values)]
    return out


def parse_zip(options: list[str]) -> dict[str, list[Any]]:
    """As `--grid`, and every list of one length: the lists are advanced together."""
    lists = parse_lists(options, "--zip")
    if len({len(v) for v in lists.values()}) > 1:
        lengths = ", ".join(f"{path} has {len(v)}" for path, v in lists.items())
        refuse("--zip", f"lists are advanced together, so they need one length: {lengths}")
    return lists


def _bound(text: str, option: str) -> int | float:
    try:
        number = float(text)
    except ValueError:
        refuse("--random", f"bounds are numbers: not {text!r} in {option!r}")
    return int(number) if number.is_integer() and "." not in text else number


def parse_random(options: list[str]) -> dict[str, dict[str, Any]]:
    """`lr=log_uniform:1e-4:1e-2` -> {"lr": {"distribution": "log_uniform", "low": 0.0001,
    "high": 0.01}}; `arch=choice:topk,batchtopk` -> {"arch": {"distribution": "choice",
    "values": ["topk", "batchtopk"]}}."""
    out: dict[str, dict[str, Any]] = {}
    for option in options:
        path, spec = _split(option, "--random", RANDOM_FORMS)
        distribution, _, rest = spec.partition(":")
        if distribution == "choice" and rest:
            values = [parse_value(v) for v in split_values(rest)]
            out[path] = {"distribution": "choice", "values": values}
            continue
        bounds = rest.split(":")
        if distribution not in BOUNDED or len(bounds) != 2:
            refuse("--random", f"takes {RANDOM_FORMS}: not {option!r}")
        low, high = (_bound(b, option) for b in bounds)
        out[path] = {"distribution": distribution, "low": low, "high": high}
    return out


def parameters(
    grid: list[str], zip_: list[str], random: list[str], draws: int | None, seed: int | None
) -> dict[str, Any]:
    """The API's `parameters`: `draws` is its `count` (members drawn per grid and zip row)."""
    out: dict[str, Any] = {
        "grid": parse_lists(grid, "--grid"),
        "zip": parse_zip(zip_),
        "random": parse_random(random),
    }
    if random and draws is None:
        refuse("--random", "needs --draws N: how many members to draw")
    if draws is not None and not random:
        refuse("--draws", "goes with --random: the number of members to draw")
    if seed is not None and not random:
        refuse("--seed", "goes with --random: it seeds the draws")
    if draws is not None:
        out["count"] = draws
    if seed is not None:
        out["seed"] = seed
    return out
