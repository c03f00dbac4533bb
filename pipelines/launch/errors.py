"""The launcher's two kinds of refusal, each printed as one sentence, and a failed job's sentence.

Role: `UsageError` is a mistake in how a job was called (exit code 2);
      `OutputError` is an output folder the job cannot use or could not write
      (its `exit_code` says which: 2 when the folder must not be used, 1 when it
      cannot be written). Neither is ever shown as a traceback; nor is the error
      of a job that failed while it ran (`failure_sentence`).
"""

from __future__ import annotations


# `display_name(path)`: a path as the tables and sentences show it.
from footprint_audit.schemas.names import source_name as display_name

__all__ = ["UsageError", "OutputError", "failure_sentence", "display_name"]


class UsageError(Exception):
    """A mistake in how the job was called: printed as one sentence, exit code 2."""


class OutputError(Exception):
    """The output folder cannot be used or written: one sentence, exit code `exit_code`."""

    def __init__(self, sentence: str, exit_code: int = 1) -> None:
        super().__init__(sentence)
        self.exit_code = exit_code


def failure_sentence(exc: BaseException) -> str:
    """One sentence for a job that failed while it ran: the first line of the innermost error
    (an OS error's own words and file), or the runner's last `Type: message` line."""
    seen: set[int] = set()
    inner: BaseException = exc
    while id(inner) not in seen:
        seen.add(id(inner))
        nxt = inner.__cause__ or inner.__context__
        if nxt is None:
            break
        inner = nxt
    if isinstance(inner, OSError) and inner.strerror:
        where = f" ({display_name(str(inner.filename))})" if inner.filename else ""
        return f"{inner.strerror}{where}"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    # Beam wraps a worker's error in text ending with the original `Type: message` line.
    typed_lines = [line for line in lines if ": " in line and line.split(":", 1)[0].replace(".", "").isidentifier()]
    return (typed_lines[-1] if typed_lines else lines[0] if lines else type(exc).__name__)[:500]
