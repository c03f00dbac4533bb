"""The `footprint-audit` command: `reassess`, `stream`, `compact`, `report`, `diff`.

Pattern: a thin dispatcher; each subcommand owns its flags (`run(argv)`).
Role:    the console script. A user's mistake is one sentence on stderr and
         exit code 2, never a traceback; Beam options pass through untouched.
         Log lines (Beam's included) stay off stderr unless `FOOTPRINT_AUDIT_LOG`
         asks for them: `pipelines.launch.quiet`, installed first thing by `main`.
         Ctrl-C or SIGTERM, from the first moment (imports included), is one line
         and exit code 130 or 143 (`pipelines.launch.interrupts`).
"""

from __future__ import annotations

import os
import sys

from footprint_audit.pipelines.launch import (
    die_by_late_signals, install, interrupted_exit, lost_interrupt, raise_on_terminate, stop_signal_taken,
)

USAGE = """usage: footprint-audit COMMAND [options]

commands:
  reassess  --input GLOB --output DIR [--declarations FILE] [Beam options]
            batch re-assessment of recorded runs into Parquet readings
  stream    --source URI --output DIR [--declarations FILE] [Beam options]
            audit runs as their events arrive (Kafka, Pub/Sub, files)
  compact   OUT [--retain-hours N] [--idle-seconds S]
            roll a stream output's window folders up into one file each
  report    DIR [--html FILE]
            what the readings say, in the terminal or as one HTML file
  diff      OLD_DIR NEW_DIR [--html FILE] [--output DIR]
            which verdicts moved between two outputs (exit 1 when some did)

`footprint-audit --version` prints the version.
`footprint-audit COMMAND --help` for a command's options.
"""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    raise_on_terminate()  # SIGTERM stops a command as Ctrl-C does, from its first moment
    install()  # log lines off stderr unless FOOTPRINT_AUDIT_LOG asks; before Beam's import warns
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if args[0] == "--version":
        from . import version

        print(f"footprint-audit {version()}")
        return 0
    if command not in ("reassess", "stream", "compact", "report", "diff"):
        print(f"footprint-audit: unknown command '{command}'\n\n{USAGE}", file=sys.stderr)
        return 2
    try:  # the command's imports too (Beam's take a second or two): Ctrl-C there is the same one line
        if command == "reassess":
            from footprint_audit.pipelines.reassess import run
        elif command == "stream":
            from footprint_audit.pipelines.stream import run
        elif command == "compact":
            from footprint_audit.pipelines.compact import run
        elif command == "report":
            from footprint_audit.pipelines.report import run
        else:
            from footprint_audit.pipelines.diff import run
        code = run(rest)
        signum = lost_interrupt()  # a signal whose exception something swallowed: still the interrupt
        if signum is not None and code < 128:
            return _interrupted(command, 128 + signum)
        if argv is None:  # the process is the command's: a signal from here on is its own death
            die_by_late_signals()
        return code
    except BrokenPipeError:  # the reader of our output went away (`| head`): not an error
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        except OSError:
            pass
        return 0
    except (KeyboardInterrupt, Exception) as exc:
        # Ctrl-C, SIGTERM or SIGHUP (`interrupts.Terminated`), or after one, the interrupt as a library
        # raised it (DuckDB's "Query interrupted")
        signum = stop_signal_taken()
        if signum is None and not isinstance(exc, KeyboardInterrupt):
            raise
        return _interrupted(command, 128 + signum if signum is not None else interrupted_exit(exc))


def _interrupted(command: str, code: int) -> int:
    print(f"footprint-audit {command}: interrupted; nothing was published", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
