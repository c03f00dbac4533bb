"""Memory stays bounded on big inputs: peak memory of the reader and of the whole job, by input size.

    python -m bench.bench_memory [--sizes-mb 32,128,512] [--dead-lines N] [--dead-elements N] [--work DIR] [--keep]

Three measurements (and the --dead-… ones), each on generated input (written under --work, removed after):

1. `transforms.decode.lines` alone (tracemalloc peak of Python allocations) streaming
   one JSON Lines file of N MB with `iter_lines`, only counting the items: bounded by
   the longest line, not by the file.
2. The real CLI (`python -m footprint_audit.pipelines.cli reassess`, Beam's local runner) on one
   JSON Lines file of N MB: peak RSS of the process tree (psutil, polled every 50 ms).
   What grows with N is the runner's shuffle of the keyed events, not the reading.
3. The real CLI on a run whose calls each return a 1 MB result (recording and JSON
   Lines): peak RSS against the bytes of the input.
4. With `--dead-lines N`: the real CLI on one gzip JSON Lines file of N lines `x` (6 million
   compress to about 12 KB), every line a `not-json` dead letter: peak RSS of the process tree
   and of its largest process, against the count of dead letters, not the input's bytes.
5. With `--dead-elements N`: the same for one gzip events array of one event and N numbers
   (a document read whole: every number a `not-an-event` dead letter).

Never run by the tests (timings and RSS depend on the machine).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import psutil

from footprint_audit.schemas.events import FORMAT_EVENT_STREAM
from footprint_audit.transforms.decode import lines

ROOT = Path(__file__).resolve().parents[1]

MB = 1 << 20


def write_jsonl(path: Path, size_mb: int) -> int:
    """A JSON Lines event stream of about `size_mb` MB (runs of 10 calls, ~1 KB events); returns events."""
    n = 0
    target = size_mb * MB
    with open(path, "wb", buffering=1 << 20) as f:
        written = run = 0
        while written < target:
            meta = {"runId": f"run-{run:07d}-1", "wallClockMs": 1790400000000, "sessionId": "s"}
            for c in range(10):
                for ev in (
                    {"type": "agentfootprint.stream.tool_start",
                     "payload": {"toolCallId": f"c{c}", "toolName": "list_hosts"}, "meta": meta},
                    {"type": "agentfootprint.stream.tool_end",
                     "payload": {"toolCallId": f"c{c}", "result": {"hosts": ["h" * 40] * 16}, "durationMs": 3}, "meta": meta},
                ):
                    line = json.dumps(ev).encode() + b"\n"
                    f.write(line)
                    written += len(line)
                    n += 1
            run += 1
    return n


def write_big_results(d: Path, calls: int, result_bytes: int = MB) -> int:
    """A recording envelope and a JSON Lines file whose every call returns a `result_bytes` string."""
    meta = {"runId": "run-1790400000000-1", "wallClockMs": 1790400000000}
    events = []
    for c in range(calls):
        events.append({"type": "agentfootprint.stream.tool_start",
                       "payload": {"toolCallId": f"c{c}", "toolName": "fetch"}, "meta": meta})
        events.append({"type": "agentfootprint.stream.tool_end",
                       "payload": {"toolCallId": f"c{c}", "result": "[" + "1," * (result_bytes // 2 - 1) + "1]"}, "meta": meta})
    doc = {"format": "agentfootprint.recording.v1", "run": {"runId": meta["runId"]}, "recording": {"events": events}}
    (d / "big-results.json").write_bytes(json.dumps(doc).encode())
    lines_meta = dict(meta, runId="run-1790400000001-1")
    with open(d / "big-results.jsonl", "wb") as f:
        for ev in events:
            f.write(json.dumps(dict(ev, meta=lines_meta)).encode() + b"\n")
    return sum(p.stat().st_size for p in d.iterdir())


def reader_peak(path: Path) -> tuple[float, int, float]:
    """(tracemalloc peak MB, items, seconds) of streaming one JSON Lines file through `iter_lines`."""
    tracemalloc.start()
    t0 = time.perf_counter()
    n = 0
    with open(path, "rb") as raw:
        stream = io.BufferedReader(raw, buffer_size=1 << 20)
        for _item in lines.iter_lines(str(path), stream, FORMAT_EVENT_STREAM):
            n += 1
    seconds = time.perf_counter() - t0
    _cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / MB, n, seconds


def cli_peak(inp: Path, out: Path, *extra: str, largest: dict | None = None) -> tuple[float, float, int]:
    """(peak RSS MB of the process tree, seconds, exit code) of one `reassess` run; `largest`, when
    given, gets `"MB"`: the peak RSS of its largest process."""
    cmd = [sys.executable, "-m", "footprint_audit.pipelines.cli", "reassess", "--input", str(inp), "--output", str(out),
           "--no-progress", "--quiet", *extra]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ps = psutil.Process(proc.pid)
    peak = one = 0
    while proc.poll() is None:
        try:
            each = [ps.memory_info().rss] + [c.memory_info().rss for c in ps.children(recursive=True)]
            peak, one = max(peak, sum(each)), max(one, *each)
        except psutil.Error:
            pass
        time.sleep(0.05)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if proc.returncode != 0:
        print(err[-2000:], file=sys.stderr)
    if largest is not None:
        largest["MB"] = one / MB
    return peak / MB, time.perf_counter() - t0, proc.returncode


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes-mb", default="32,128,512", help="JSON Lines sizes to measure, in MB")
    p.add_argument("--big-result-calls", type=int, default=40, help="calls with a 1 MB result each (0: skip)")
    p.add_argument("--dead-lines", type=int, default=0, help="also: one gzip JSON Lines file of N non-JSON lines")
    p.add_argument("--dead-lines-spill", type=int, default=None, metavar="N",
                   help="the --dead-lines run with --spill-partition-bytes N")
    p.add_argument("--dead-elements", type=int, default=0, help="also: one gzip events array of N numbers")
    p.add_argument("--work", default=None, help="scratch folder (default: a temporary one)")
    p.add_argument("--keep", action="store_true", help="keep the generated input")
    args = p.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    baseline_rss = cli_peak_of_nothing(work)
    print(f"python: {sys.version.split()[0]}, cpus: {os.cpu_count()}, RAM: {psutil.virtual_memory().total / 2**30:.1f} GiB")
    print(f"CLI on a 1-event input (interpreter + Beam, the floor): peak RSS {baseline_rss:.0f} MB\n")
    print("| input | events | reader peak (tracemalloc) | reader time | CLI peak RSS | CLI time |")
    print("|---|---:|---:|---:|---:|---:|")
    try:
        for size in [int(s) for s in args.sizes_mb.split(",") if s]:
            d = work / f"jsonl-{size}"
            d.mkdir(exist_ok=True)
            f = d / "stream.jsonl"
            n = write_jsonl(f, size)
            peak, items, secs = reader_peak(f)
            assert items == n
            rss, t, rc = cli_peak(d, work / f"out-{size}")
            print(f"| 1 JSON Lines file, {f.stat().st_size / MB:,.0f} MB | {n:,} | {peak:.1f} MB | {secs:.1f} s | "
                  f"{rss:,.0f} MB{'' if rc == 0 else ' (FAILED)'} | {t:.1f} s |")
            shutil.rmtree(d) if not args.keep else None
            shutil.rmtree(work / f"out-{size}", ignore_errors=True)
        if args.big_result_calls:
            d = work / "big-results"
            d.mkdir(exist_ok=True)
            total = write_big_results(d, args.big_result_calls)
            rss, t, rc = cli_peak(d, work / "out-big-results")
            print(f"| {args.big_result_calls} calls × 1 MB result, as a recording + JSON Lines ({total / MB:,.0f} MB) | "
                  f"{4 * args.big_result_calls} | – | – | {rss:,.0f} MB{'' if rc == 0 else ' (FAILED)'} | {t:.1f} s |")
        event = b'{"type":"agentfootprint.stream.tool_start","payload":{},"meta":{"runId":"r"}}'
        spill = [] if args.dead_lines_spill is None else ["--spill-partition-bytes", str(args.dead_lines_spill)]
        for n, name, data, what, extra in (
            (args.dead_lines, "dead.jsonl.gz", b"x\n" * args.dead_lines, "JSON Lines file of {n:,} non-JSON lines", spill),
            (args.dead_elements, "dead.json.gz", b"[" + event + b",1" * args.dead_elements + b"]",
             "events array of 1 event and {n:,} numbers", []),
        ):
            if not n:
                continue
            d = work / name.split(".")[0]
            d.mkdir(exist_ok=True)
            (d / name).write_bytes(gzip.compress(data, 9))
            largest: dict = {}
            rss, t, rc = cli_peak(d, work / f"out-{name}", *extra, largest=largest)
            print(f"| 1 gzip {what.format(n=n)} ({(d / name).stat().st_size:,} bytes){' '.join(['', *extra])} | "
                  f"{n:,} dead letters | – | – | {rss:,.0f} MB (largest process {largest['MB']:,.0f} MB)"
                  f"{'' if rc == 0 else ' (FAILED)'} | {t:.1f} s |")
            shutil.rmtree(d, ignore_errors=True)
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def cli_peak_of_nothing(work: Path) -> float:
    d = work / "tiny"
    d.mkdir(exist_ok=True)
    (d / "one.jsonl").write_text(json.dumps({"type": "agentfootprint.stream.tool_end",
                                             "payload": {"toolCallId": "c", "result": []}, "meta": {"runId": "r"}}) + "\n")
    rss, _t, _rc = cli_peak(d, work / "out-tiny")
    shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(work / "out-tiny", ignore_errors=True)
    return rss


if __name__ == "__main__":
    sys.exit(main())
