"""Ctrl-C during a job: stop at once, say so in one line, leave nothing half-made.

Pattern: context managers around the launcher's phases (main thread only).
Role:    while the pipeline runs, SIGINT runs the job's clean-up (its staging
         folder removed, its lock released), prints one line and ends the
         process with exit code 130, without waiting for Beam's workers to wind
         down (their tracebacks would follow). While the tables are being
         published (a few renames), SIGINT is held back, so a publish is never
         cut in half by it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

__all__ = ["stop_on_interrupt", "held_interrupts", "INTERRUPTED_EXIT"]

INTERRUPTED_EXIT = 130


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def stop_on_interrupt(clean_up: Callable[[], None], message: str) -> Iterator[None]:
    """Within the block, Ctrl-C calls `clean_up`, prints `message` and exits with code 130 at once."""
    if not _main_thread():
        yield
        return

    def stop(_signum: int, _frame: object) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut the clean-up short
        try:
            clean_up()
        finally:
            try:
                sys.stderr.write(message + "\n")
                sys.stderr.flush()
            finally:
                os._exit(INTERRUPTED_EXIT)

    previous = signal.signal(signal.SIGINT, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def held_interrupts() -> Iterator[None]:
    """Within the block, Ctrl-C is ignored (the block is short and must not be cut in half)."""
    if not _main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
