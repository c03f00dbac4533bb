"""`footprint-audit reassess`: the batch job, and its `--incremental` runs.

`run` answers `--help` and a usage mistake (`args`) and takes a local output's lock
(`pipelines.output.target`) before Beam is imported: those answers come at once, and a second
job on a locked output is refused before anything slow; the job itself is `command.launch`.
"""

from __future__ import annotations

from footprint_audit.pipelines.launch import OutputError, UsageError, held_interrupts
from footprint_audit.pipelines.output import OutputTarget

from .args import parse, say

__all__ = ["run"]


def run(argv: list[str] | None = None) -> int:
    """Run the batch job; returns the exit code (0 done, 1 failed, 2 usage mistake, 3 over the
    dead-letter rate, 130, 143 or 129 interrupted by Ctrl-C, SIGTERM or SIGHUP)."""
    settings = parse(argv)
    target = OutputTarget(settings.output, settings.partition_by)
    try:
        try:
            target.lock()
        except (OutputError, UsageError) as exc:
            say(str(exc))
            return exc.exit_code if isinstance(exc, OutputError) else 2
        from .command import launch  # Beam's import: a second or more

        return launch(settings, target)
    finally:
        with held_interrupts():  # a second Ctrl-C does not cut the clean-up short
            target.discard()
            target.close()
