"""Help text as typer shows it. A docstring is wrapped by hand at 100 columns for the source;
typer keeps those line breaks in a group's command list, so a summary read as broken lines at
any terminal width. Each command's help is its docstring with each paragraph on one line: rich
wraps it to the terminal."""

from __future__ import annotations

import inspect

import typer


def unwrapped(doc: str) -> str:
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def unwrap_help(app: typer.Typer) -> None:
    """Give every command of `app` and of its groups its docstring, paragraphs unwrapped."""
    for command in app.registered_commands:
        doc = command.help or (command.callback.__doc__ if command.callback else None)
        if doc:
            command.help = unwrapped(doc)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            unwrap_help(group.typer_instance)
