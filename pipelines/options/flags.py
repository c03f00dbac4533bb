"""The commands' parser: one sentence for a mistake, and its own flags kept for `check.check_beam_args`.

Role: every command builds its parser from this module and light ones (no Beam import), so that
`--help` and a usage mistake are answered before Beam is imported. An argument that no option
takes (a glob the shell expanded into many paths, most often) is refused here when no option of
Beam's can be its value, with the way out: quote the glob.
"""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

__all__ = ["FlagParser", "OptionsError", "unexpected"]


class OptionsError(Exception):
    """An argument neither the command nor Beam takes: printed as one sentence, exit code 2."""


def unexpected(arg: str) -> str:
    """The sentence for an argument that no option takes."""
    return (f"unexpected argument '{arg}' (options start with --): a glob the shell expanded gives many paths, "
            "so quote it (--input 'recordings/**')")


class FlagParser(argparse.ArgumentParser):
    """An `ArgumentParser` that keeps its long flags (`long_flags`), to pass to `check_beam_args`, and
    says a mistake in one sentence (`PROG: MESSAGE`, exit code 2) instead of the usage and the error."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.long_flags: list[str] = []  # before argparse adds --help
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (--help lists the options)\n")

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.long_flags.extend(o for o in action.option_strings if o.startswith("--"))
        return action

    def parse_command(self, argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
        """`parse_known_args`, refusing a left-over argument that cannot be the value of a Beam option
        (it does not follow a `--flag` the parser left over): the rest is for `check_beam_args`."""
        args, rest = self.parse_known_args(argv)
        for before, arg in zip(["", *rest], rest):
            if not arg.startswith("-") and not (before.startswith("--") and "=" not in before):
                self.error(unexpected(arg))
        return args, rest
