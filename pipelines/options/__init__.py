"""The command's options against Beam's: refusing what neither defines, and reading Beam's arguments as the user gave them."""

from .beam_args import flag_given, flag_value
from .check import FlagParser, OptionsError, check_beam_args

__all__ = ["FlagParser", "OptionsError", "check_beam_args", "flag_given", "flag_value"]
