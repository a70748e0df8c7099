"""Where fit's FP8 fp16-output campaign went (issue 24): ``research/fp8_fp16/`` at the
repository root, not installed with fpemu. The old import paths and commands fail with a
message that names the new spelling, so nobody is left with a bare "No module named".

>>> import fpemu.fit.staged
Traceback (most recent call last):
...
ModuleNotFoundError: fpemu.fit.staged moved out of the library: import research.fp8_fp16.staged from a checkout of the fpemu repository (run from its root)
>>> print(moved_command("fit"))
the FP8 fp16-output staged-model search moved out of the library: python -m research.fp8_fp16 fit --space fp8-fp16|FILE.json DUMP... (from the root of a checkout of the fpemu repository)
"""

from __future__ import annotations

from ..errors import moved_modules

#: The campaign's modules, once ``fpemu.fit.<name>``, now ``research.fp8_fp16.<name>``.
MOVED_MODULES = frozenset(
    {"fp8_devices", "fp8_judge", "fp8_probes", "fp8_run", "staged", "staged_kernel", "staged_report",
     "staged_search", "spaces"}
)  # fmt: skip

#: What each moved command did, and its new spelling.
_COMMANDS = {
    "probe": ("the FP8 fp16-output experiment",
              "python -m research.fp8_fp16 probe --device cuda|cpu|fake:NAME [--inputs ...] [--record DIR] [--no-search]"),
    "fit": ("the FP8 fp16-output staged-model search",
            "python -m research.fp8_fp16 fit --space fp8-fp16|FILE.json DUMP..."),
}  # fmt: skip


def moved_command(command: str) -> str:
    """The one-line error for ``fpemu probe --experiment fp8-fp16`` ("probe") or ``fpemu fit
    --space`` ("fit")."""
    what, spelling = _COMMANDS[command]
    return f"{what} moved out of the library: {spelling} (from the root of a checkout of the fpemu repository)"


def install_finder() -> None:
    """Make the campaign's old module names fail naming their new spelling."""
    moved_modules({f"{__package__}.{m}": f"{__package__}.{m} moved out of the library: import research.fp8_fp16.{m} "
                   "from a checkout of the fpemu repository (run from its root)" for m in MOVED_MODULES})
