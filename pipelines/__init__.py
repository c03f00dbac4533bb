"""Entry points: `reassess` (batch), `stream` (streaming), `report`, and the CLI."""

from importlib import metadata as _metadata

from .quiet import install as _quiet_beam

_quiet_beam()  # before Beam is imported: its import prints a warning


def version() -> str:
    """The installed footprint-audit version (`unknown` when run from a tree that was not installed)."""
    try:
        return _metadata.version("footprint-audit")
    except _metadata.PackageNotFoundError:
        return "unknown"
