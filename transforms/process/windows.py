"""A value a step gives from `finish_bundle`, placed in the global window (Beam asks it of those).

Pattern: one function.
Role:    the steps that gather elements within a bundle and give them at its end (the keyed join's
         gathering, the spill files' names, the writer's batches, the stream's batched events and
         counts) place them in the global window here, at a time of their choosing.
"""

from __future__ import annotations

from typing import Any

from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.windowed_value import WindowedValue

__all__ = ["in_global_window"]


def in_global_window(value: Any, at_seconds: float = 0) -> WindowedValue:
    """`value` in the global window at `at_seconds` (event time, Unix seconds)."""
    return WindowedValue(value, at_seconds, (GlobalWindow(),))
