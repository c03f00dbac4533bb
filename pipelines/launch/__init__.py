"""What every command shares when it launches: refusals as sentences, interrupts and the quiet of log lines
(no Beam imported here)."""

from .errors import OutputError, UsageError, display_name, failure_sentence
from .interrupts import (
    committed, deferred_interrupts, die_by_late_signals, held_interrupts, ignore_stop_signals, interrupted_exit, lost_interrupt,
    raise_on_terminate, stop_on_interrupt, stop_signal_taken,
)
from .quiet import install, shown_level

__all__ = [
    "OutputError", "UsageError", "committed", "deferred_interrupts", "die_by_late_signals", "display_name", "failure_sentence",
    "held_interrupts", "ignore_stop_signals", "install", "interrupted_exit", "lost_interrupt", "raise_on_terminate",
    "shown_level", "stop_on_interrupt", "stop_signal_taken",
]
