"""No log line is lost: what a script's ranks print reaches `rank<r>.log` whole, however fast
they print, however long a line, and the last line too when no newline ends it."""

from __future__ import annotations

from pathlib import Path

from gpudeck.engine.command_output import LINE_CUT_MARK, READ_BYTES, CommandFiles, CommandOutput


def _files(tmp_path: Path) -> tuple[CommandOutput, Path]:
    rank_dir = tmp_path / "logs" / "run_x" / "attempt_0" / "0"
    rank_dir.mkdir(parents=True)
    files = CommandFiles(
        run_dir=tmp_path,
        log_dir=tmp_path / "logs",
        metrics_file=tmp_path / "metrics.jsonl",
        error_file=tmp_path / "error.json",
        checkpoint_dir=tmp_path / "ckpt",
        output_file=tmp_path / "agent.log",
    )
    return CommandOutput(files), rank_dir / "stdout.log"


def test_a_fast_printer_is_copied_whole_in_one_check(tmp_path: Path) -> None:
    output, stdout = _files(tmp_path)
    lines = [f"line {i:07d} {'x' * 90}\n".encode() for i in range(500_000)]  # 50 MB
    stdout.write_bytes(b"".join(lines))
    output.collect()  # once: it used to copy 256 KiB a check and never the rest
    copied = (tmp_path / "rank0.log").read_bytes()
    assert len(copied) == stdout.stat().st_size
    assert copied.endswith(lines[-1])


def test_a_line_longer_than_a_read_is_cut_and_what_follows_flows(tmp_path: Path) -> None:
    output, stdout = _files(tmp_path)
    long_line = b"y" * (READ_BYTES + 1000) + b"\n"
    stdout.write_bytes(b"before\n" + long_line + b"after\n")
    output.collect()
    copied = (tmp_path / "rank0.log").read_bytes()
    assert copied.startswith(b"before\n")
    assert copied.endswith(b"after\n")  # used to stall for good at the long line
    assert LINE_CUT_MARK in copied
    assert copied.replace(LINE_CUT_MARK, b"") == stdout.read_bytes()  # nothing lost


def test_the_last_line_without_a_newline_is_copied_once_the_command_exits(
    tmp_path: Path,
) -> None:
    output, stdout = _files(tmp_path)
    stdout.write_bytes(b"step 1\nfinal_loss 0.25")
    output.collect()
    assert (tmp_path / "rank0.log").read_bytes() == b"step 1\n"  # still running: may grow
    output.flush_logs()
    assert (tmp_path / "rank0.log").read_bytes() == b"step 1\nfinal_loss 0.25\n"
    output.flush_logs()  # idempotent
    assert (tmp_path / "rank0.log").read_bytes() == b"step 1\nfinal_loss 0.25\n"
