"""Entry points: `reassess` (batch), `stream` (streaming), `report`, and the CLI."""

from .quiet import install as _quiet_beam

_quiet_beam()  # before Beam is imported: its import prints a warning
