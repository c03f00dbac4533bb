"""`footprint-audit reassess`: the batch job, and its `--incremental` runs."""

from .command import run

__all__ = ["run"]
