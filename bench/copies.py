"""What two tiny copied files cost a run: `reassess` with and without them beside a generated input.

Role: the duplicate files' benchmark (not a test). A generated input (`bench.run.dataset`) is read
by `footprint-audit reassess` as it is, and with a second `--input` folder holding byte-for-byte
copies of its two bad files (49 and 18 bytes: a retried upload); the two are alternated run by run,
each run its own process (every core, the default `--workers`), the figure its wall seconds; the
ratio is of two medians from the same invocation. Target: the copies cost at most 1.3x.

    python -m bench.copies --size 80MB --runs 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.generate import parse_size
from bench.run import DATA, dataset
from bench.stream_kafka import machine_line


def _run(inputs: list[str], decl: str, out: str) -> float:
    cmd = [sys.executable, "-m", "footprint_audit.pipelines.cli", "reassess", *(a for i in inputs for a in ("--input", i)),
           "--output", out, "--declarations", decl, "--no-progress", "--quiet"]
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr[-2000:]}")
    return wall


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="80MB")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--layout", choices=["recordings", "stream"], default="recordings")
    args = ap.parse_args(argv)
    folder, decl = dataset(args.layout, parse_size(args.size), args.seed, DATA)
    with tempfile.TemporaryDirectory() as tmp:
        copies = Path(tmp, "copies")
        copies.mkdir()
        for bad in sorted(Path(folder).glob("d000/bad-*")):
            shutil.copy(bad, copies / f"copy-of-{bad.name}")
        modes = {"alone": [folder], "two copies": [folder, str(copies)]}
        print(machine_line())
        secs: dict[str, list[float]] = {m: [] for m in modes}
        for i in range(args.runs):
            for mode, inputs in modes.items():
                secs[mode].append(_run(inputs, decl, os.path.join(tmp, "out")))
                print(f"run {i + 1} {mode}: {secs[mode][-1]:.2f} s wall, load {os.getloadavg()[0]:.2f}", flush=True)
        med = {m: statistics.median(s) for m, s in secs.items()}
        print(f"median of {args.runs}: alone {med['alone']:.2f} s, two copies {med['two copies']:.2f} s: "
              f"{med['two copies'] / med['alone']:.2f}x (target at most 1.3x); {machine_line()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
