"""A sweep's members: the parameter values of each, and its config. Pure: no database."""

from __future__ import annotations

import copy
import itertools
import math
import random
from collections.abc import Iterator
from typing import Any

from gpudeck.schemas.sweeps import MAX_MEMBERS, RandomParameter, SweepParameters


class TooManyMembers(ValueError):
    def __init__(self, count: int) -> None:
        super().__init__(f"{count} members; a sweep has at most {MAX_MEMBERS}")
        self.count = count


def member_count(parameters: SweepParameters) -> int:
    grid = math.prod(len(v) for v in parameters.grid.values())
    rows = len(next(iter(parameters.zip.values()))) if parameters.zip else 1
    return grid * rows * (parameters.count or 1)


def members(parameters: SweepParameters) -> list[dict[str, Any]]:
    """Each member's values by path, in a stable order: the grid's combinations (its first
    parameter slowest), each with every zip row, each drawn `count` times for random."""
    count = member_count(parameters)
    if count > MAX_MEMBERS:
        raise TooManyMembers(count)
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
