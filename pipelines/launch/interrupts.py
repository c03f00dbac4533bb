"""Ctrl-C, SIGTERM or SIGHUP during a job: stop at once, say so in one line, leave nothing half-made.

Pattern: context managers and handlers around the launcher's phases (main thread only).
Role:    SIGTERM (`kill`, a service manager, a CI job's timeout) stops a command as Ctrl-C
         (SIGINT) does, with exit code 128 + the signal's number (130 for Ctrl-C, 143 for
         SIGTERM, 129 for SIGHUP: a closed terminal, a dropped ssh), as a shell reports a
         process the signal ended. From the command line's start (`raise_on_terminate`), SIGTERM
         and SIGHUP raise `Terminated`, a `KeyboardInterrupt`, so the code that handles Ctrl-C
         handles all three; below, "both" is all three. While the pipeline runs, either signal
         runs the job's clean-up (its staging folder removed, its lock released), prints one
         line and ends the process at once, without waiting for Beam's workers to wind down
         (their tracebacks would follow). From the publish on (a few renames: the commit
         point, `committed`) all are ignored to the process's end: a publish is never cut in
         half, and exit code 0 and a published output always go together.
         Where a step and the note of it must not be parted (the lock taken and kept, a
         staging folder made and recorded), both wait until it is done (`deferred_interrupts`).
         The worker processes ignore both (`ignore_stop_signals`): the launcher stops the job.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

__all__ = [
    "stop_on_interrupt",
    "held_interrupts",
    "committed",
    "deferred_interrupts",
    "raise_on_terminate",
    "ignore_stop_signals",
    "die_by_late_signals",
    "interrupted_exit",
    "stop_signal_taken",
    "lost_interrupt",
    "Terminated",
    "STOP_SIGNALS",
]

#: The signals that stop a command: Ctrl-C, SIGTERM and SIGHUP.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread where Python raises `KeyboardInterrupt` for Ctrl-C."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__()
        self.signum = signum


def interrupted_exit(exc: BaseException) -> int:
    """The exit code of a command stopped by `exc`: 128 + its signal's number (130 for Ctrl-C)."""
    return 128 + (exc.signum if isinstance(exc, Terminated) else signal.SIGINT)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


_TAKEN: list[int] = []  # the stop signals this process has taken, in order
_OWNED: list[bool] = []  # true once a command line owns this process's signals (`raise_on_terminate`)
_COMMITTED: list[bool] = []  # true once such a process's job has begun its publish (`committed`)


def _interrupt(signum: int) -> KeyboardInterrupt:
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def _raise_terminated(signum: int, _frame: object) -> None:
    _TAKEN.append(signum)
    raise _interrupt(signum)


def _quiet_unraisable(unraisable: Any) -> None:
    """A stop signal's exception raised where Python only prints it ("Exception ignored in", a callback
    of the import system or a finalizer) is not printed: it is noted, and `lost_interrupt` acts on it."""
    if not (isinstance(unraisable.exc_value, KeyboardInterrupt) and _TAKEN):
        sys.__unraisablehook__(unraisable)


def raise_on_terminate() -> None:
    """From now on SIGTERM and SIGHUP raise `Terminated` in this process (main thread only), as Ctrl-C
    raises `KeyboardInterrupt`: the launcher's clean-up (`finally`, `except KeyboardInterrupt`) runs for all.
    Each is noted too (`stop_signal_taken`): a library that catches the exception raises its own, and
    one swallowed where Python only prints it still stops the command (`lost_interrupt`, `committed`)."""
    if _main_thread():
        _TAKEN.clear()
        _COMMITTED.clear()
        _OWNED.append(True)
        sys.unraisablehook = _quiet_unraisable
        for signum in STOP_SIGNALS:
            signal.signal(signum, _raise_terminated)


def stop_signal_taken() -> int | None:
    """The first stop signal this process took since `raise_on_terminate`, if any: an error raised
    after it is the interrupt as a library reports it (DuckDB's "Query interrupted")."""
    return _TAKEN[0] if _TAKEN else None


def lost_interrupt() -> int | None:
    """A stop signal taken before any commit whose exception did not stop the command (swallowed where
    Python only prints it): the command ends as interrupted all the same."""
    return _TAKEN[0] if _TAKEN and not _COMMITTED else None


def die_by_late_signals() -> None:
    """From a command's end to its process's end, a stop signal ends the process as the signal itself
    does (no line: the command is done), unless its job committed (then it stays ignored). Python's
    handler would run there inside the interpreter's shutdown (`atexit`, finalizers), where its
    exception can only be swallowed, and the process would exit 0 as if no signal had come."""
    if _main_thread() and not _COMMITTED:
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)


def ignore_stop_signals() -> None:
    """Ignore Ctrl-C and SIGTERM (a worker process: the launcher that started it stops the job)."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


@contextmanager
def stop_on_interrupt(clean_up: Callable[[], None], message: str) -> Iterator[None]:
    """Within the block, Ctrl-C or SIGTERM calls `clean_up`, prints `message` and exits at once
    with code 128 + the signal's number."""
    if not _main_thread():
        yield
        return

    def stop(signum: int, _frame: object) -> None:
        ignore_stop_signals()  # a second Ctrl-C (or SIGTERM) does not cut the clean-up short
        try:
            clean_up()
        finally:
            try:
                sys.stderr.write(message + "\n")
                sys.stderr.flush()
            finally:
                os._exit(128 + signum)

    with _handled_by(stop):
        yield


@contextmanager
def held_interrupts() -> Iterator[None]:
    """Within the block, Ctrl-C and SIGTERM are ignored (the block is short and must not be cut in half)."""
    if not _main_thread():
        yield
        return
    with _handled_by(signal.SIG_IGN):
        yield


@contextmanager
def committed() -> Iterator[None]:
    """The block is the job's commit point (its publish): stop signals are ignored from its start, and,
    in a process a command line owns, to the process's end, so that exit code 0 and a published
    output always go together. Elsewhere (a test calling the command in its own process) only
    within the block."""
    if _OWNED and _main_thread():
        ignore_stop_signals()
        if _TAKEN:  # a signal came before the commit, and its exception was swallowed: not committed
            raise _interrupt(_TAKEN[0])
        _COMMITTED.append(True)
        yield
        return
    with held_interrupts():
        yield


@contextmanager
def _handled_by(handler: Any) -> Iterator[None]:
    """Within the block, Ctrl-C and SIGTERM go to `handler`; their handlers before it are put back after
    (after a commit, `committed`, they stay ignored)."""
    previous = {} if _COMMITTED else {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, signal.SIG_IGN if _COMMITTED else before)


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Within the block, Ctrl-C and SIGTERM wait (noted, not lost): they act once it ends. For a few
    file-system steps that must not be parted from the note of them, so the clean-up finds what to undo.

    Deferred in Python's handlers, not by a signal mask: a mask holds only the calling thread, and
    the kernel hands the signal to another thread (Beam's, Arrow's), whose C handler has the main
    thread run Python's handler inside the block all the same."""
    if not _main_thread():
        yield
        return
    caught: list[int] = []
    try:
        with _handled_by(lambda signum, _frame: caught.append(signum)):
            yield
    finally:
        if caught:
            signal.raise_signal(caught[0])
