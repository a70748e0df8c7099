"""Helpers shared by the CLI test files: running ``fpemu`` through its real entry point.

Tests import them as ``from cli_helpers import ...``, as they import ``reference``.
"""

from __future__ import annotations

from fpemu.cli import main


def fails(argv: list[str], status: int, capsys, *, names: str | None = None, says: str = "") -> str:
    """Run ``fpemu <argv>``; check the status and the one error line; return that line."""
    assert main(argv) == status
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err  # also: no warning and no traceback
    line = lines[0]
    assert line.startswith("fpemu: error:") and "Traceback" not in line and "internal error" not in line
    if names is not None:
        assert names in line, line
    assert says in line, line
    return line
