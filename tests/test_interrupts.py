"""`report` and `diff` stopped by Ctrl-C, SIGTERM or SIGHUP at many moments: one line, 128 + the signal.

The signal lands at a moment stepped through the command's run (from Arrow's load on), so it
meets the imports, a query DuckDB runs (which reports it as its own "Query interrupted" error)
and the writing of the page. Every signal that finds the command running must end it with the one
line and the signal's exit code (or, in the last instants of the interpreter's exit, the signal's
own death, as a shell reports it): a traceback, or any other code, is a miss.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import ROOT, reassess_cli

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


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


@pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="needs Linux's /proc to see Arrow load")
@pytest.mark.parametrize("command", ["report", "diff"])
def test_a_signal_at_any_moment_of_report_or_diff_is_one_line_and_its_exit_code(out, tmp_path, command):
    args = ["report", str(out), "--html", str(tmp_path / "page.html")] if command == "report" else ["diff", str(out), str(out)]
    landed = 0
    for step in range(12):
        signum = SIGNALS[step % 3]
        p = subprocess.Popen([sys.executable, "-m", "footprint_audit.pipelines.cli", *args], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            while not _arrow_loaded(p) and p.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(0.12 * step)  # the moment: stepped through the command's run
            if p.poll() is not None:
                p.communicate()
                continue  # it had finished: no signal sent
            p.send_signal(signum)
            _, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        landed += 1
        if p.returncode == -signum:  # in the interpreter's last instants, the signal's own death
            assert err == "", err
            continue
        assert (p.returncode, err) == (128 + signum, f"footprint-audit {command}: interrupted; nothing was published\n"), \
            f"step {step}, signal {signum}"
    assert landed >= 6, "the command ended before most signals: too few moments tried"
