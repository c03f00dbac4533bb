"""The launcher's two kinds of refusal, each printed as one sentence.

Role: `UsageError` is a mistake in how a job was called (exit code 2);
      `OutputError` is an output folder the job cannot use or could not write
      (its `exit_code` says which: 2 when the folder must not be used, 1 when it
      cannot be written). Neither is ever shown as a traceback.
"""

from __future__ import annotations

__all__ = ["UsageError", "OutputError"]


class UsageError(Exception):
    """A mistake in how the job was called: printed as one sentence, exit code 2."""


class OutputError(Exception):
    """The output folder cannot be used or written: one sentence, exit code `exit_code`."""

    def __init__(self, sentence: str, exit_code: int = 1) -> None:
        super().__init__(sentence)
        self.exit_code = exit_code
