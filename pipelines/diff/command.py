"""`footprint-audit diff OLD_DIR NEW_DIR [--html FILE] [--output DIR]`: the command.

Role:  parses the command line, compares the two outputs (`pipelines.diff.verdicts`), prints the text,
       and writes the changed calls (`--output`) and the page (`--html`, `pipelines.diff.html`).
Exit:  0 when no call changed and none is on one side only, 1 when some did, 2 for a usage
       mistake (one sentence on stderr).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from footprint_audit.pipelines.launch import UsageError
from footprint_audit.pipelines.options import FlagParser

from .html import build_html
from .verdicts import CHANGED_FILE, EXIT_CHANGED, compare, load_side, render_text, write_changed

__all__ = ["run"]


def run(argv: list[str] | None = None) -> int:
    """Compare two outputs; the exit code (0 nothing changed, 1 something did, 2 usage mistake)."""
    p = FlagParser(prog="footprint-audit diff",
                   description="Compare the readings of two output folders: which verdicts moved.")
    p.add_argument("old", metavar="OLD_DIR", help="the earlier output folder")
    p.add_argument("new", metavar="NEW_DIR", help="the later output folder")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML page to FILE")
    p.add_argument("--output", metavar="DIR", help=f"also write the changed calls to DIR/{CHANGED_FILE}")
    try:
        args = p.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    try:
        if args.output is not None and os.path.lexists(args.output) and not os.path.isdir(args.output):
            raise UsageError(f"--output {args.output} is a file, not a folder")
        diff = compare(load_side(args.old, "OLD_DIR"), load_side(args.new, "NEW_DIR"))
        sys.stdout.write(render_text(diff))
        if args.output is not None:
            print(f"changed calls written to {write_changed(diff, args.output)}")
        if args.html is not None:
            try:
                Path(args.html).write_text(build_html(diff), encoding="utf-8")
            except OSError as exc:
                raise UsageError(f"--html {args.html} cannot be written ({exc.strerror or exc})") from None
            print(f"HTML written to {args.html}")
    except UsageError as exc:
        print(f"footprint-audit diff: {exc}", file=sys.stderr)
        return 2
    return EXIT_CHANGED if diff.changed else 0


if __name__ == "__main__":
    sys.exit(run())
