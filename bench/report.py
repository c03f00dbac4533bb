"""`footprint-audit report` at the scale of a real audit: its time, memory, page size and load time.

For each `--calls` figure, an output of that many calls is written straight as Parquet
(`python -m bench.audit_output`, a process of its own: a child's peak RSS starts from its
parent's at the fork, so this process stays small), and the report is run as a user runs it (`footprint-audit report OUT
--html FILE`, a process of its own): the wall seconds of the whole command, its peak RSS (the
kernel's count for that process, `os.wait4`), the lines of the terminal report, the page's size,
the calls it embeds and, in headless `chromium` (`tests/browser.py`, run as a command), the
milliseconds from opening the page to its first frame after the load event (median of `--runs`
openings, the first one left out as a warm-up).

    .venv/bin/python -m bench.report                          # 100,000 and 1,000,000 calls
    .venv/bin/python -m bench.report --calls 100000 --runs 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The tests' headless-browser driver, run as a command: the page's median load time in milliseconds.
BROWSER = Path(__file__).resolve().parents[1] / "tests" / "browser.py"


def find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def measure(root: Path, calls: int, runs: int) -> dict[str, float]:
    """The report's figures on an output of `calls` calls written under `root`."""
    out = root / f"out-{calls}"
    subprocess.run([sys.executable, "-m", "bench.audit_output", str(out), "--calls", str(calls)], check=True,
                   stdout=subprocess.DEVNULL, timeout=1800)
    page = root / f"report-{calls}.html"
    text = root / f"report-{calls}.txt"
    t = time.perf_counter()
    with text.open("wb") as stdout:
        proc = subprocess.Popen([sys.executable, "-m", "footprint_audit.pipelines.cli", "report", str(out),
                                 "--html", str(page)], stdout=stdout)
        _pid, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    figures = {"seconds": time.perf_counter() - t, "lines": len(text.read_text(encoding="utf-8").splitlines()),
               "rss MiB": usage.ru_maxrss / 1024, "MB": page.stat().st_size / 1e6,
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
    print(f"{'calls':>10} {'report s':>9} {'peak MiB':>9} {'text lines':>10} {'page MB':>8} {'calls in page':>13}"
          f" {'load ms':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for calls in args.calls:
            f = measure(Path(tmp), calls, args.runs)
            print(f"{calls:>10,} {f['seconds']:>9.1f} {f['rss MiB']:>9.0f} {f['lines']:>10} {f['MB']:>8.1f}"
                  f" {f['embedded']:>13,}"
                  f" {f['load ms']:>8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
