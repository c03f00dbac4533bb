"""Entry points: `reassess` (batch), `stream` (streaming), `report`, `diff`, and the CLI."""

from importlib import metadata as _metadata

from .quiet import install as _quiet_beam

_quiet_beam()  # log lines off stderr unless FOOTPRINT_AUDIT_LOG asks; before Beam's import warns


def version() -> str:
    """The installed footprint-audit version (`unknown` when run from a tree that was not installed)."""
    try:
        return _metadata.version("footprint-audit")
    except _metadata.PackageNotFoundError:
        return "unknown"
