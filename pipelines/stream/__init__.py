"""`footprint-audit stream`: the streaming job, its watch and its end-of-run summary."""

from .command import run

__all__ = ["run"]
