"""What a command job (torchrun and its ranks) leaves in files, turned into GPUDeck's terms.

- Rank logs: torchrun (`--log-dir D --redirects 3`) writes each rank's output to
  `D/<run_id>_<random>/attempt_<k>/<local_rank>/{stdout,stderr}.log`; new whole lines are
  appended to `<run_dir>/rank<r>.log`, the file the worker streams for every kind.
- Metrics: JSON lines in the metrics file (`gpudeck.report`), each `{"step": n, name: number}`
  (optionally `"total": steps`), become `metrics` and `progress` events.
- Checkpoints: a directory `step_<n>` that appears in the checkpoint dir (renamed into place
  whole, as the engine's own) is marked complete (engine/checkpoint_dir.py) and becomes a
  `checkpoint` event.
- Failure: torchrun's "Root Cause" summary names the failing rank; its traceback comes from
  the error file (`TORCHELASTIC_ERROR_FILE`, written by scripts using `@record`), else from the
  end of that rank's log. It is written to `<run_dir>/rank<r>.traceback`, as rank.py does.

Torch-free: it runs in the worker.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpudeck.engine.checkpoint_dir import COMPLETE_MARKER, step_dirs

READ_BYTES = 256 * 1024
# Ends the piece of a line longer than READ_BYTES; the line goes on in the next piece.
LINE_CUT_MARK = b" [gpudeck: line longer than 256 KiB, cut here; it continues below]\n"
LOG_TAIL_BYTES = 4000
_ATTEMPT_RE = re.compile(r"attempt_(\d+)$")
_ROOT_RANK_RE = re.compile(r"Root Cause.*?rank\s*:\s*(\d+)", re.S)
_ROOT_EXIT_RE = re.compile(r"Root Cause.*?exitcode\s*:\s*(-?\d+)", re.S)
_ROOT_TRACE_RE = re.compile(r"Root Cause.*?traceback\s*:\s*(.*?)\n\s*(?:=|-{5})", re.S)

Event = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class CommandFiles:
    """Where a command job's files are (all under its run dir or checkpoint dir)."""

    run_dir: Path
    log_dir: Path  # torchrun's --log-dir
    metrics_file: Path
    error_file: Path  # TORCHELASTIC_ERROR_FILE of the agent
    checkpoint_dir: Path
    output_file: Path  # the agent's own stdout and stderr
    rank_offset: int = 0


def _next_lines(path: Path, offset: int, *, final: bool = False) -> tuple[int, bytes]:
    """(bytes consumed from `offset`, bytes to copy): the whole lines of the next read. A line
    longer than a read is cut there, with a marker, so that it never stalls what follows;
    `final`: the last line is copied even without its newline."""
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            chunk = fh.read(READ_BYTES)
    except FileNotFoundError:
        return 0, b""
    end = chunk.rfind(b"\n") + 1
    if end:
        return end, chunk[:end]
    if len(chunk) == READ_BYTES:
        return len(chunk), chunk + LINE_CUT_MARK
    if final and chunk:
        return len(chunk), chunk + b"\n"
    return 0, b""


def _read_whole_lines(path: Path, offset: int) -> tuple[int, bytes]:
    """(the new offset, the whole lines since `offset`), to the end of what is written."""
    found: list[bytes] = []
    while True:
        consumed, data = _next_lines(path, offset)
        if not consumed:
            return offset, b"".join(found)
        found.append(data)
        offset += consumed


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass
class CommandOutput:
    files: CommandFiles
    _offsets: dict[Path, int] = field(default_factory=dict)
    _metrics_offset: int = 0
    _checkpoints: set[int] = field(default_factory=set)

    def collect(self) -> list[Event]:
        """Copy new rank log lines; return the events the files hold since the last call."""
        self._copy_rank_logs()
        return self._metrics() + self._new_checkpoints()

    def _rank_files(self) -> list[tuple[int, Path]]:
        found = []
        for attempt in sorted(self.files.log_dir.glob("*/attempt_*")):
            match = _ATTEMPT_RE.search(attempt.name)
            for rank_dir in attempt.iterdir() if match and attempt.is_dir() else ():
                if rank_dir.name.isdigit():
                    local = int(rank_dir.name)
                    found += [(local, rank_dir / n) for n in ("stdout.log", "stderr.log")]
        return found

    def flush_logs(self) -> None:
        """Once the command has exited: every byte of every rank's output, its last line too
        when no newline ended it."""
        self._copy_rank_logs(final=True)

    def _copy_rank_logs(self, *, final: bool = False) -> None:
        """All the whole lines written since the last call (a rank that prints fast is
        copied to its end, not a read's worth a check)."""
        for local, path in self._rank_files():
            offset = self._offsets.get(path, 0)
            rank = self.files.rank_offset + local
            with (self.files.run_dir / f"rank{rank}.log").open("ab") as out:
                while True:
                    consumed, data = _next_lines(path, offset, final=final)
                    if not consumed:
                        break
                    out.write(data)
                    offset += consumed
            self._offsets[path] = offset

    def _metrics(self) -> list[Event]:
        metrics_file = self.files.metrics_file
        self._metrics_offset, lines = _read_whole_lines(metrics_file, self._metrics_offset)
        events: list[Event] = []
        for line in lines.decode(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            step = record.get("step") if isinstance(record, dict) else None
            if not isinstance(step, int) or isinstance(step, bool):
                continue
            total = record.get("total")
            metrics = {k: v for k, v in record.items() if k not in ("step", "total") and _finite(v)}
            events.append(("metrics", {"step": step, "metrics": metrics}))
            valid_total = isinstance(total, int) and not isinstance(total, bool)
            events.append(("progress", {"step": step, "total": total if valid_total else None}))
        return events

    def _new_checkpoints(self) -> list[Event]:
        events: list[Event] = []
        for step, entry in step_dirs(self.files.checkpoint_dir):
            if step in self._checkpoints:
                continue
            self._checkpoints.add(step)
            (entry / COMPLETE_MARKER).touch()
            events.append(("checkpoint", {"step": step, "path": str(entry)}))
        return events

    def failure(self) -> tuple[int, str] | None:
        """(global rank, what it said) of the rank torchrun names as the root cause."""
        summary = _tail(self.files.output_file, 64 * 1024)
        found = _ROOT_RANK_RE.search(summary)
        if found is None:
            return None
        rank = int(found[1])
        exit_code = _ROOT_EXIT_RE.search(summary)
        trace = _ROOT_TRACE_RE.search(summary)
        text = _error_file_text(self.files.error_file)
        if text is None:
            how = f"exit code {exit_code[1]}" if exit_code else "it failed"
            said = trace[1].strip() if trace else ""
            log = _tail(self.files.run_dir / f"rank{rank}.log", LOG_TAIL_BYTES)
            text = f"{how}: {said}\nthe end of its log:\n{log}".strip()
        return rank, text


def _tail(path: Path, size: int) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - size))
            return fh.read().decode(errors="replace")
    except FileNotFoundError:
        return ""


def _error_file_text(path: Path) -> str | None:
    """The traceback torchelastic's @record wrote (message, then the Python call stack)."""
    try:
        data = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    message = data.get("message") if isinstance(data, dict) else None
    if isinstance(message, dict):
        extra = message.get("extraInfo") or {}
        stack = extra.get("py_callstack") if isinstance(extra, dict) else None
        return str(stack or message.get("message") or "").strip() or None
    return str(message).strip() if message else None
