"""A launcher's side task in a forked process, beside the job: `Background(fn)`, then `result()`.

Role: the launcher has work that needs no result until the job is done (the manifest's
sizes and sha256 of every input file) and that would otherwise run alone after it, on one
core, while the job's workers sit finished. Forked before Beam starts a thread (the same
moment and the same check as `pipelines.workers`), the child computes `fn()` on a core the
launcher is not using (it builds the job alone first) and hands the result back through a
pipe, pickled. Where a fork is not safe (threads already running: a test session, a library
caller) or this machine has one core, `result()` computes `fn()` in the launcher itself, so
the answer is the same either way. The child dies with the launcher (`PR_SET_PDEATHSIG`),
ignores Ctrl-C and SIGTERM, and is killed by `close()` if its result was never asked for.
"""

from __future__ import annotations

import os
import pickle
import signal
from typing import Callable, Generic, TypeVar

from .interrupts import ignore_stop_signals
from .workers import die_with_parent, can_fork, cores

__all__ = ["Background"]

T = TypeVar("T")


class Background(Generic[T]):
    """`fn()` computed in a forked child while the launcher goes on; `result()` waits for it."""

    def __init__(self, fn: Callable[[], T], fork: bool | None = None) -> None:
        self._fn = fn
        self._pid: int | None = None
        self._fd: int | None = None
        if fork is None:
            fork = cores() > 1 and can_fork()
        if fork:
            self._start()

    @property
    def forked(self) -> bool:
        """True while a child is computing (or holds) the result."""
        return self._pid is not None

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs, else None."""
        return self._pid

    def _start(self) -> None:
        read_fd, write_fd = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: compute, send, exit without the launcher's atexit handlers
            os.close(read_fd)
            code = 1
            try:
                ignore_stop_signals()
                die_with_parent(parent)
                data = pickle.dumps(self._fn(), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write_fd, "wb") as f:
                    f.write(data)
                code = 0
            except BaseException:  # noqa: BLE001 - the launcher computes it again itself
                pass
            finally:
                os._exit(code)
        os.close(write_fd)
        self._pid, self._fd = pid, read_fd

    def result(self) -> T:
        """The child's result once it is done; `fn()` computed here when there is no child or it failed."""
        if self._pid is not None and self._fd is not None:
            with os.fdopen(self._fd, "rb") as f:
                data = f.read()
            self._fd = None
            _pid, status = os.waitpid(self._pid, 0)
            self._pid = None
            if status == 0 and data:
                return pickle.loads(data)
        return self._fn()

    def close(self) -> None:
        """Kill and reap a child whose result was not asked for (the job failed or was interrupted)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._pid is not None:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                os.waitpid(self._pid, 0)
            except ChildProcessError:
                pass
            self._pid = None
