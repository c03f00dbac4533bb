"""Entry points: `reassess` (batch), `stream` (streaming), `report`, `diff`, and the CLI."""

from importlib import metadata as _metadata


def version() -> str:
    """The installed footprint-audit version (`unknown` when run from a tree that was not installed)."""
    try:
        return _metadata.version("footprint-audit")
    except _metadata.PackageNotFoundError:
        return "unknown"
