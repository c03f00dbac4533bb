"""`footprint-audit report`: the audit of an output, in the terminal and as one HTML page."""

from .command import run, text_table
from .html import asset, esc, html_table, page

__all__ = ["asset", "esc", "html_table", "page", "run", "text_table"]
