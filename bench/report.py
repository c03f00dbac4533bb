"""`footprint-audit report` at the scale of a real audit: its time, its page's size and load time.

For each `--calls` figure, an output of that many calls is written straight as Parquet
(`bench/audit_output.py`), and the report is run as a user runs it (`footprint-audit report OUT
--html FILE`, in this process): the wall seconds of the whole command, the lines of the terminal
report, the page's size, the calls it embeds and, in headless `chromium` (`tests/browser.py`, run as a command), the
milliseconds from opening the page to its first frame after the load event (median of `--runs`
openings, the first one left out as a warm-up).

    .venv/bin/python -m bench.report                          # 100,000 and 1,000,000 calls
    .venv/bin/python -m bench.report --calls 100000 --runs 5
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.audit_output import write_audit_output

#: The tests' headless-browser driver, run as a command: the page's median load time in milliseconds.
BROWSER = Path(__file__).resolve().parents[1] / "tests" / "browser.py"


def find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def measure(root: Path, calls: int, runs: int) -> dict[str, float]:
    """The report's figures on an output of `calls` calls written under `root`."""
    from footprint_audit.pipelines.report import command as report

    out = write_audit_output(root / f"out-{calls}", calls)
    page = root / f"report-{calls}.html"
    text = io.StringIO()
    t = time.perf_counter()
    with contextlib.redirect_stdout(text):
        assert report.run([str(out), "--html", str(page)]) == 0
    figures = {"seconds": time.perf_counter() - t, "lines": len(text.getvalue().splitlines()),
               "MB": page.stat().st_size / 1e6,
               "embedded": page.read_text(encoding="utf-8").count('class="call"'), "load ms": float("nan")}
    if find_chromium():
        res = subprocess.run([sys.executable, str(BROWSER), str(page), "--runs", str(runs)],
                             capture_output=True, text=True, check=True, timeout=900)
        figures["load ms"] = float(res.stdout)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    if not find_chromium():
        print("no chromium: the page's load time is left out (`apt-get install -y chromium`)", file=sys.stderr)
    print(f"{'calls':>10} {'report s':>9} {'text lines':>10} {'page MB':>8} {'calls in page':>13} {'load ms':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for calls in args.calls:
            f = measure(Path(tmp), calls, args.runs)
            print(f"{calls:>10,} {f['seconds']:>9.1f} {f['lines']:>10} {f['MB']:>8.1f} {f['embedded']:>13,}"
                  f" {f['load ms']:>8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
