"""`reassess`, `report` and `diff` stopped by Ctrl-C, SIGTERM or SIGHUP at many moments.

`reassess`: exit 0 and its tables published go together, and an interrupted job's code (128 + the
signal) with the previous output as it was; a signal after the publish began finds the job done.
`report` and `diff`: one line, 128 + the signal.

The signal lands at a moment stepped through the command's run (from Arrow's load on), so it
meets the imports, a query DuckDB runs (which reports it as its own "Query interrupted" error)
and the writing of the page. Every signal that finds the command running must end it with the one
line and the signal's exit code (or, in the last instants of the interpreter's exit, the signal's
own death, as a shell reports it): a traceback, or any other code, is a miss.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest

from helpers import ROOT, reassess_cli, tree_bytes

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
LINE = "footprint-audit {}: interrupted; nothing was published\n"


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("interrupts") / "out"
    res = reassess_cli("--input", str(ROOT / "examples" / "recordings"), "--output", str(folder), "--no-progress", "--quiet")
    assert res.returncode == 0, res.stderr
    return folder


def _arrow_loaded(p: subprocess.Popen) -> bool:
    try:
        return "libarrow" in Path(f"/proc/{p.pid}/maps").read_text()
    except OSError:
        return False


def _signalled(args: list[str], moment: Callable[[subprocess.Popen], None], signum: int) -> tuple[int, str] | None:
    """The CLI run with `args`, sent `signum` once `moment(p)` returns: (exit code, stderr), or None
    when it had finished by then (no signal sent)."""
    p = subprocess.Popen([sys.executable, "-m", "footprint_audit.pipelines.cli", *args], cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        moment(p)
        if p.poll() is not None:
            p.communicate()
            return None
        p.send_signal(signum)
        _, err = p.communicate(timeout=120)
        return p.returncode, err
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def _until(condition: Callable[[], bool], p: subprocess.Popen) -> None:
    deadline = time.monotonic() + 300
    while not condition() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)


@pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="needs Linux's /proc to see Arrow load")
@pytest.mark.parametrize("command", ["report", "diff"])
def test_a_signal_at_any_moment_of_report_or_diff_is_one_line_and_its_exit_code(out, tmp_path, command):
    args = ["report", str(out), "--html", str(tmp_path / "page.html")] if command == "report" else ["diff", str(out), str(out)]
    landed = 0
    for step in range(12):
        signum = SIGNALS[step % 3]
        # the moment: stepped through the command's run, from Arrow's load on
        ended = _signalled(args, lambda p: (_until(lambda: _arrow_loaded(p), p), time.sleep(0.12 * step)), signum)
        if ended is None:
            continue
        landed += 1
        code, err = ended
        # a shell shows 128 + n for a process the signal itself ended, too (in the interpreter's first or
        # last instants, with no line)
        assert code in (128 + signum, -signum), f"step {step}: {code} {err!r}"
        assert err in (LINE.format(command), "" if code < 0 else None), f"step {step}: {code} {err!r}"
    assert landed >= 6, "the command ended before most signals: too few moments tried"


def test_a_signal_at_any_moment_of_reassess_gives_0_and_the_tables_or_its_code_and_nothing(out, tmp_path):
    # exit 0 and the new tables published go together; an interrupted job's code goes with the
    # previous output as it was (no lock, no staging); before Python runs, the signal's own death
    def args(folder: Path) -> list[str]:
        return ["reassess", "--input", str(ROOT / "examples" / "recordings" / "synthetic"), "--output", str(folder),
                "--no-progress", "--quiet"]

    new = tmp_path / "new"
    assert subprocess.run([sys.executable, "-m", "footprint_audit.pipelines.cli", *args(new)], cwd=ROOT).returncode == 0
    published, previous = tree_bytes(new), tree_bytes(out)
    outcomes: Counter = Counter()
    for step in range(20):
        work = tmp_path / f"work-{step}"
        shutil.copytree(out, work)
        signum = SIGNALS[step % 3]
        table = work / "readings" / "part-00000-of-00001.parquet"
        first = os.stat(table).st_ino

        def renamed() -> bool:
            try:
                return os.stat(table).st_ino != first
            except OSError:
                return True  # between the removal of the old file and the rename of the new one

        # the last moment is the commit point: the publish has begun renaming files in
        moment = (lambda p: _until(renamed, p)) if step == 19 else (lambda p: time.sleep(0.2 * step))
        ended = _signalled(args(work), moment, signum)
        code, err = ended if ended is not None else (0, "")
        if code == 0:
            assert (err, tree_bytes(work)) == ("", published), f"step {step}: {err!r}"
            outcomes["published"] += 1
        else:  # a shell shows 128 + n for a process the signal itself ended, too (before Python ran)
            assert code in (128 + signum, -signum), f"step {step}: {code} {err!r}"
            assert err in (LINE.format("reassess"), "" if code < 0 else None), f"step {step}: {code} {err!r}"
            assert tree_bytes(work) == previous, f"step {step}"
            outcomes["interrupted"] += 1
        shutil.rmtree(work)
    assert outcomes["interrupted"] >= 3 and outcomes["published"] >= 1, outcomes


SWALLOWED = """
import os, signal, sys
from footprint_audit.pipelines import cli, report
from footprint_audit.pipelines.launch import committed


class Finalized:  # the signal lands in its finalizer, where Python prints an exception and goes on
    def __del__(self):
        os.kill(os.getpid(), signal.{signal})
        sum(range(10_000))  # the handler runs here


def command(argv):
    Finalized()
    if argv == ["publish"]:
        with committed():
            print("published")
    return 0


report.run = command
sys.exit(cli.main(["report", *sys.argv[1:]]))
"""


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
@pytest.mark.parametrize("then", ["return", "publish"])
def test_a_signal_whose_exception_is_swallowed_still_stops_the_command_before_any_publish(signum, then):
    # a signal that lands in a finalizer (or the import system's callbacks) raises where Python only
    # prints "Exception ignored": the command still ends as interrupted, with its one line, unpublished
    script = SWALLOWED.replace("{signal}", signum.name)
    res = subprocess.run([sys.executable, "-c", script, then], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert (res.returncode, res.stderr, res.stdout) == (128 + signum, LINE.format("report"), "")


LATE = """
import atexit, os, signal, sys
from footprint_audit.pipelines import cli, report
from footprint_audit.pipelines.launch import committed


def late():  # the signal lands after the command has returned, in the interpreter's shutdown
    os.kill(os.getpid(), signal.{signal})
    sum(range(10_000))  # a Python handler would run here, where its exception is only printed


def command(argv):
    atexit.register(late)
    if argv == ["publish"]:
        with committed():
            print("published")
    return 0


report.run = command
sys.argv = ["footprint-audit", "report", *sys.argv[1:]]
sys.exit(cli.main())
"""


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
@pytest.mark.parametrize("then", ["return", "publish"])
def test_a_signal_after_the_command_has_ended_is_never_exit_0_unless_it_committed(signum, then):
    # after the command's end a signal is the process's own death (as a shell shows it), not an exception
    # swallowed in the shutdown and an exit 0; after a commit it stays ignored: 0 and the publish together
    res = subprocess.run([sys.executable, "-c", LATE.replace("{signal}", signum.name), then], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    expected = (0, "", "published\n") if then == "publish" else (-signum, "", "")
    assert (res.returncode, res.stderr, res.stdout) == expected
