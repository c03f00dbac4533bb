"""The command's options against Beam's: the commands' parser, refusing what neither defines, and reading Beam's arguments as the user gave them.

Nothing here imports Beam but `check` (`check_beam_args`), which is imported from its module once the parse is done.
"""

from .beam_args import flag_given, flag_value
from .flags import FlagParser, OptionsError

__all__ = ["FlagParser", "OptionsError", "flag_given", "flag_value"]
