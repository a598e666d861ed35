"""Read one module's input or output during a forward pass, and stop the pass right there
(the layers after the hook point would only cost time); or replace it for the rest of the pass
(sae_eval's loss recovered: the SAE's reconstruction, or zeros, in its place)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal

import torch


class HookError(RuntimeError):
    """The hook point did not run, or gave no tensor."""


class _Captured(Exception):  # control flow out of the forward pass, not an error
    def __init__(self, value: torch.Tensor) -> None:
        self.value = value


def _first_tensor(value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, tuple | list) and value and isinstance(value[0], torch.Tensor):
        return value[0]  # e.g. a block returning (hidden_states, attention weights, ...)
    raise HookError(f"the hook point gave a {type(value).__name__}, not a tensor")


def capture(
    model: torch.nn.Module,
    module: torch.nn.Module,
    io: Literal["output", "input"],
    inputs: Mapping[str, torch.Tensor],
) -> torch.Tensor:
    """`module`'s output (or first input) when `model(**inputs)` runs, [batch, seq, d]."""

    def on_output(_m: torch.nn.Module, _args: Any, out: Any) -> None:
        raise _Captured(_first_tensor(out))

    def on_input(_m: torch.nn.Module, args: Any, kwargs: dict[str, Any]) -> None:
        if args:
            raise _Captured(_first_tensor(args))
        raise _Captured(_first_tensor(kwargs.get("hidden_states", next(iter(kwargs.values())))))

    if io == "output":
        handle = module.register_forward_hook(on_output)
    else:
        handle = module.register_forward_pre_hook(on_input, with_kwargs=True)
    try:
        model(**inputs)
    except _Captured as captured:
        return captured.value
    finally:
        handle.remove()
    raise HookError("the hook point was not reached by the forward pass")


def _with_first(value: Any, new: torch.Tensor) -> Any:
    """`value` with its first tensor (as `_first_tensor` finds it) replaced by `new`."""
    if isinstance(value, torch.Tensor):
        return new
    if isinstance(value, tuple | list) and value and isinstance(value[0], torch.Tensor):
        return type(value)([new, *value[1:]])
    raise HookError(f"the hook point gave a {type(value).__name__}, not a tensor")


@contextmanager
def replacing(
    module: torch.nn.Module,
    io: Literal["output", "input"],
    change: Callable[[torch.Tensor], torch.Tensor],
) -> Iterator[None]:
    """While inside, every forward pass through `module` goes on with `change(t)` in place of
    its output (or first input) `t`, [batch, seq, d]."""

    def on_output(_m: torch.nn.Module, _args: Any, out: Any) -> Any:
        return _with_first(out, change(_first_tensor(out)))

    def on_input(_m: torch.nn.Module, args: Any, kwargs: dict[str, Any]) -> Any:
        if args:
            return _with_first(args, change(_first_tensor(args))), kwargs
        key = "hidden_states" if "hidden_states" in kwargs else next(iter(kwargs))
        return args, {**kwargs, key: change(_first_tensor(kwargs[key]))}

    if io == "output":
        handle = module.register_forward_hook(on_output)
    else:
        handle = module.register_forward_pre_hook(on_input, with_kwargs=True)
    try:
        yield
    finally:
        handle.remove()
