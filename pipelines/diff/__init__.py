"""`footprint-audit diff`: which verdicts moved between two outputs."""

from .command import run

__all__ = ["run"]
