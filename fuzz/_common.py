"""What both fuzz targets share: the command line (atheris, or hypothesis for a time budget)."""

from __future__ import annotations

import sys
from typing import Callable


def load_targets(imports: Callable[[], dict], main: bool) -> dict:
    """The target modules, from `imports()`: under atheris (running as a script) instrumented
    for coverage, else as they are (hypothesis, or replayed by the regression tests)."""
    try:
        import atheris
    except ImportError:
        return imports()
    if not main:
        return imports()
    with atheris.instrument_imports():
        return imports()


def fuzz_main(argv: list[str], check: Callable[[bytes], None], hypothesis_run: Callable[[float], None]) -> None:
    """`python -m fuzz.X [atheris args]` or `python -m fuzz.X --hypothesis SECONDS`, from the repository root."""
    if len(argv) > 2 and argv[1] == "--hypothesis":
        hypothesis_run(float(argv[2]))
        return
    try:
        import atheris
    except ImportError:
        sys.exit("atheris is not installed: pip install atheris, or run with --hypothesis SECONDS")
    atheris.Setup(argv, check)
    atheris.Fuzz()
