"""The command's options against Beam's: the commands' parser, refusing what neither defines, and reading Beam's
arguments as the user gave them.

Nothing here imports Beam but `check` (`check_beam_args`), whose module is imported when the name is first used, once
the parse is done.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .beam_args import flag_given, flag_value
from .flags import FlagParser, OptionsError

if TYPE_CHECKING:
    from .check import check_beam_args

__all__ = ["FlagParser", "OptionsError", "check_beam_args", "flag_given", "flag_value"]


def __getattr__(name: str) -> Any:
    if name == "check_beam_args":
        return import_module(".check", __name__).check_beam_args
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
