"""`footprint-audit stream`: the streaming job, its watch and its end-of-run summary.

`run` answers `--help` and a usage mistake (`args`) before Beam is imported; the job itself is
`command.launch`.
"""

from __future__ import annotations

from .args import StreamSettings, parse

__all__ = ["StreamSettings", "run"]


def run(argv: list[str] | None = None) -> int:
    """Run the streaming job; returns the exit code (2 for a usage mistake, 130 when interrupted)."""
    settings = parse(argv)
    from .command import launch  # Beam's import: a second or more

    return launch(settings)
