"""A sweep's members: the parameter values of each, and its config. Pure: no database."""

from __future__ import annotations

import copy
import itertools
import json
import math
import random
from collections.abc import Iterator
from typing import Any

from gpudeck.schemas.sweeps import MAX_MEMBERS, RandomParameter, SweepParameters, SweptParameter

# On a Slurm cluster a sweep's members are the tasks of a few job arrays: Slurm queues them.
MAX_MEMBERS_ON_CLUSTER = 10_000
SHOWN_VALUES = 6  # a longer list is shown by its first values, its last and its length


class TooManyMembers(ValueError):
    def __init__(self, count: int, most: int = MAX_MEMBERS) -> None:
        where = " on a Slurm cluster" if most == MAX_MEMBERS_ON_CLUSTER else ""
        super().__init__(f"{count} members; a sweep{where} has at most {most}")
        self.count = count


def member_count(parameters: SweepParameters) -> int:
    grid = math.prod(len(v) for v in parameters.grid.values())
    rows = len(next(iter(parameters.zip.values()))) if parameters.zip else 1
    return grid * rows * (parameters.count or 1)


def members(parameters: SweepParameters, most: int = MAX_MEMBERS) -> list[dict[str, Any]]:
    """Each member's values by path, in a stable order: the grid's combinations (its first
    parameter slowest), each with every zip row, each drawn `count` times for random. At most
    `most` (a sweep on a Slurm cluster may have more: its members go as job arrays)."""
    count = member_count(parameters)
    if count > most:
        raise TooManyMembers(count, most)
    rng = random.Random(parameters.seed)
    return list(_members(parameters, rng))


def _members(parameters: SweepParameters, rng: random.Random) -> Iterator[dict[str, Any]]:
    grid_paths = list(parameters.grid)
    columns = zip(*parameters.zip.values(), strict=True)
    zip_rows = [dict(zip(parameters.zip, row, strict=True)) for row in columns] or [{}]
    for combination in itertools.product(*parameters.grid.values()):
        for row in zip_rows:
            for _ in range(parameters.count or 1):
                drawn = {p: draw(d, rng) for p, d in parameters.random.items()}
                yield {**dict(zip(grid_paths, combination, strict=True)), **row, **drawn}


def draw(parameter: RandomParameter, rng: random.Random) -> Any:
    low, high = parameter.low, parameter.high
    if parameter.distribution == "choice":
        return rng.choice(parameter.values or [])
    assert low is not None and high is not None  # the schema's rule
    if parameter.distribution == "int":
        return rng.randint(int(low), int(high))
    if parameter.distribution == "log_uniform":
        return math.exp(rng.uniform(math.log(low), math.log(high)))
    return rng.uniform(low, high)


def with_values(config: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """`config` with each dotted path set (nested objects made where missing); a copy."""
    out = copy.deepcopy(config)
    for path, value in values.items():
        *parents, leaf = path.split(".")
        node = out
        for name in parents:
            child = node.get(name)
            if not isinstance(child, dict):
                child = node[name] = {}
            node = child
        node[leaf] = value
    return out


def figure(value: Any) -> str:
    """A value as the sweep pages show it: numbers to 3 significant figures."""
    if isinstance(value, float):
        return f"{value:.3g}"
    return json.dumps(value) if isinstance(value, dict | list) else str(value)


def values_text(values: list[Any]) -> str:
    if len(values) <= SHOWN_VALUES:
        return ", ".join(figure(v) for v in values)
    first = ", ".join(figure(v) for v in values[: SHOWN_VALUES - 2])
    return f"{first}, …, {figure(values[-1])} ({len(values)} values)"


_DRAWN = {"uniform": "uniform", "log_uniform": "log-uniform", "int": "integers"}


def swept(parameters: SweepParameters) -> list[SweptParameter]:
    """What a sweep varies, each parameter with its values or its range, worded for a list:
    'k 8, 16, 32', 'd_sae 512, 1024 (zip)', 'lr 0.0001 to 0.01 log-uniform'."""
    found = [
        SweptParameter(
            path=p, how="grid", values=v, low=None, high=None, text=f"{p} {values_text(v)}"
        )
        for p, v in parameters.grid.items()
    ]
    found += [
        SweptParameter(
            path=p, how="zip", values=v, low=None, high=None, text=f"{p} {values_text(v)} (zip)"
        )
        for p, v in parameters.zip.items()
    ]
    for path, d in parameters.random.items():
        if d.distribution == "choice":
            text = f"{path} one of {values_text(d.values or [])}"
        else:
            text = f"{path} {figure(d.low)} to {figure(d.high)} {_DRAWN[d.distribution]}"
        found.append(
            SweptParameter(
                path=path, how=d.distribution, values=d.values, low=d.low, high=d.high, text=text
            )
        )
    return found
