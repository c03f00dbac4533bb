"""`footprint-audit report`: the audit of an output, in the terminal and as one HTML page."""

from .command import run, text_table
from .html import CSS, ERROR_HOOK, esc, html_table

__all__ = ["CSS", "ERROR_HOOK", "esc", "html_table", "run", "text_table"]
