"""Gives a process's freed memory back to the system: Arrow's allocator and C's `malloc`.

Role: called by the table writer (`transforms.write.parquet`) after each file it writes (Arrow's
pool alone also after each column it sorts). A
shard's rows are held whole while it is sorted and written (hundreds of MB for the
largest tables of a multi-GB input), then freed; both allocators keep freed pages
for later use, so without this the next shard's memory comes on top of the last one's
in the process's resident size. Arrow's pool is asked to release what it holds unused
(`MemoryPool.release_unused`), and glibc's `malloc_trim(0)` returns the free pages of
every arena; where the C library has no `malloc_trim` (musl, macOS) only Arrow's pool
is asked.

`leave_huge_pages_off()` (the launchers, first thing, so that the local runner's forked or
spawned workers inherit it) asks Linux to give this process no transparent huge pages: on a
machine whose kernel hands out 2 MiB pages to every process (`/sys/kernel/mm/transparent_hugepage/enabled`
set to `always`), part of the job's kernel time went to zeroing and splitting them for memory it
touched in small pieces and gave back (docs/performance.md). Set
`FOOTPRINT_AUDIT_HUGE_PAGES=default` in the environment to keep the system's setting.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from typing import Any

import pyarrow as pa

__all__ = ["give_back_memory", "release_arrow_memory", "leave_huge_pages_off", "HUGE_PAGES_ENV"]

#: Environment variable: `default` keeps the system's transparent huge pages for the job.
HUGE_PAGES_ENV = "FOOTPRINT_AUDIT_HUGE_PAGES"
_PR_SET_THP_DISABLE = 41  # prctl(2)


def _libc() -> Any:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None)
    except OSError:
        return None


def _libc_function(libc: Any, name: str, *argtypes: Any) -> Any:
    """The C library's function `name` (an `int` result), or None where the library has none."""
    function = getattr(libc, name, None)
    if function is None:
        return None
    function.argtypes = list(argtypes)
    function.restype = ctypes.c_int
    return function


_LIBC = _libc()
_TRIM = _libc_function(_LIBC, "malloc_trim", ctypes.c_size_t)
_PRCTL = _libc_function(_LIBC, "prctl", ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)


def leave_huge_pages_off() -> bool:
    """Ask Linux for no transparent huge pages in this process and the processes it starts from
    now on (`PR_SET_THP_DISABLE`). True when it was set; False where it cannot be (not Linux, a
    kernel before 3.15) or `$FOOTPRINT_AUDIT_HUGE_PAGES` is `default`. Nothing else changes."""
    if os.environ.get(HUGE_PAGES_ENV, "").strip().lower() == "default" or not sys.platform.startswith("linux"):
        return False
    return _PRCTL is not None and _PRCTL(_PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0


def release_arrow_memory() -> None:
    """Return the freed memory of Arrow's default pool to the system (under a microsecond when there is none)."""
    pa.default_memory_pool().release_unused()


def give_back_memory() -> None:
    """Return the freed memory of Arrow's default pool and of `malloc` to the system (best effort)."""
    release_arrow_memory()
    if _TRIM is not None:
        _TRIM(0)
