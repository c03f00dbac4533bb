"""Refusing options that neither the command nor Beam defines.

Pattern: one pure check over the arguments a command did not take itself.
Role:    `reassess` (and `stream`, which can call the same function) hands the
         arguments its own parser left over to `check_beam_args`; an option
         Beam does not define either is a usage mistake named in one sentence,
         with the closest known option when there is one, instead of Beam's
         "Discarding unparseable args" warning and a job run without it.
         Beam's options are gathered from every imported `PipelineOptions`
         subclass through Beam's public `get_all_options`, so runners' options
         (Flink, Dataflow, …) are known as soon as their classes are.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
from typing import Iterable

from apache_beam.options.pipeline_options import PipelineOptions

from .flags import OptionsError, unexpected

__all__ = ["OptionsError", "check_beam_args"]


def _beam_parser() -> argparse.ArgumentParser:
    """The parser Beam itself reads pipeline options with (every `PipelineOptions` subclass's flags)."""
    captured: list[argparse.ArgumentParser] = []
    PipelineOptions([]).get_all_options(add_extra_args_fn=captured.append)
    return captured[0]


def check_beam_args(beam_args: list[str], own_options: Iterable[str] = ()) -> None:
    """Raise `OptionsError` for the first argument in `beam_args` that Beam does not take.

    `beam_args` are what the command's own parser left over; `own_options` are the
    command's own flags (`--declarations`, …): offered as close matches, and taken as
    known when the command reads one of them from the leftovers itself. A bad value
    for one of Beam's options (`--direct_num_workers=x`) is refused the same way.
    """
    own = set(own_options)
    parser = _beam_parser()
    messages = io.StringIO()
    try:
        with contextlib.redirect_stderr(messages):
            _known, unknown = parser.parse_known_args([a for a in beam_args if a.split("=", 1)[0] not in own])
    except SystemExit:
        lines = [line for line in messages.getvalue().splitlines() if line.strip()]
        said = lines[-1].split("error: ", 1)[-1] if lines else "a Beam option is invalid"
        raise OptionsError(said) from None
    if not unknown or unknown[0] == "--":
        return
    first = unknown[0]
    if not first.startswith("-"):
        raise OptionsError(unexpected(first))
    name = first.split("=", 1)[0]
    # Beam's options by their destination, which is how Beam spells its flags.
    beam_names = sorted(f"--{dest}" for dest in PipelineOptions([]).get_all_options())
    close = next(iter(difflib.get_close_matches(name, [*sorted(own), *beam_names], n=1, cutoff=0.75)), None)
    hint = f": did you mean {close}?" if close else " (see --help for this command's options; Beam's are its pipeline options)"
    raise OptionsError(f"unknown option {name}{hint}")
