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
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

import pyarrow as pa

__all__ = ["give_back_memory", "release_arrow_memory"]


def _malloc_trim() -> Any:
    """glibc's `malloc_trim`, or None where the C library has none."""
    try:
        trim = ctypes.CDLL(ctypes.util.find_library("c") or None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_TRIM = _malloc_trim()


def release_arrow_memory() -> None:
    """Return the freed memory of Arrow's default pool to the system (under a microsecond when there is none)."""
    pa.default_memory_pool().release_unused()


def give_back_memory() -> None:
    """Return the freed memory of Arrow's default pool and of `malloc` to the system (best effort)."""
    release_arrow_memory()
    if _TRIM is not None:
        _TRIM(0)
