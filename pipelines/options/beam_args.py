"""Beam's arguments as the user gave them: whether a flag is there, and its value.

Role: the launchers decide a few things before Beam parses anything (the runner named, the
worker count, Flink's job server and master); they read the flags here, both spellings
(`--name VALUE`, `--name=VALUE`). No Beam import: `tools/jars.py` reads the runner too.
"""

from __future__ import annotations

__all__ = ["flag_given", "flag_value"]


def flag_given(beam_args: list[str], name: str) -> bool:
    """Whether `--name` is among Beam's arguments."""
    return any(a == f"--{name}" or a.startswith(f"--{name}=") for a in beam_args)


def flag_value(beam_args: list[str], name: str) -> str | None:
    """The value of `--name` among Beam's arguments, or None."""
    for i, a in enumerate(beam_args):
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
        if a == f"--{name}" and i + 1 < len(beam_args):
            return beam_args[i + 1]
    return None
