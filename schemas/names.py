"""How the tables name a local input file (`source_file`): one rule for the job, its sentences and its tables."""

from __future__ import annotations

import os

__all__ = ["source_name"]


def source_name(path: str | bytes) -> str:
    """A local file's name in the tables: its path, with each byte that is not UTF-8 written `\\xNN`
    and, so that no two paths share a name, each backslash doubled."""
    raw = path if isinstance(path, bytes) else os.fsencode(path)
    return raw.replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")
