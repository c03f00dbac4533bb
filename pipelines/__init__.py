"""Entry points: `reassess` (batch), `stream` (streaming), `report`, and the CLI."""
