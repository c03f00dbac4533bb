"""One command for every benchmark: the readers, the baseline and the Beam paths, side by side.

Role: measures the performance targets and prints one table. Each measurement runs
in its own process, pinned to one CPU (`taskset -c CPU`, else
`sched_setaffinity`), so that its peak RSS is its own and "one core" is fair
to the baseline and to Beam alike. The parent samples the RSS of the
worker's process tree every 20 ms (psutil) and also takes the worker's own
`VmHWM`; the table shows the larger. Throughput is the median of `--runs`
runs; baseline and Beam runs are interleaved, and every ratio is the ratio of
two medians measured in the same invocation.

Benchmarks (`--only` picks some):

* `readers`   — `bench/bench_readers.py`'s "all three" loop (records/s);
* `recordings`— reassess on recording files (no shuffle but the writes):
                 the plain-Python baseline (`bench/baseline.py`) and the
                 Beam job (`pipelines.reassess.command`, FnApiRunner, one worker);
* `stream`    — the same on JSON Lines / SSE event streams (one GroupByKey);
* `stateful`  — the streaming stateful join (`transforms.stream.join`)
                 through TestStream on the local streaming runner (events/s);
* `fixed`     — the job's fixed cost: the process CPU of `footprint-audit reassess
                 --workers 1` on one small recording file, minus that of
                 `python -c "import apache_beam"` (both whole processes, pinned);
* `onemb`     — peak RSS of the Beam job on one run holding one 1 MB result
                 value, against the same run with a 1 KB value;
* `big`       — (only when named, or with `--big SIZE`) peak RSS of the Beam
                 job on a large recordings input (2 GB: several minutes);
* `phases`    — (only when named) the plain path phase by phase on both layouts
                 (`bench/phases.py`): each phase's marginal CPU over the floor's, so
                 a target in "x floor" can be set against the work it must hold.

Events are counted from the output tables (`sum(runs.events)` plus the dead
letters that belong to no run), the same for the baseline and Beam; MB are
the input files' bytes on disk. The baseline's and the Beam job's tables are
compared row for row after each pair of runs ("rows equal").

The floor (`floor_parse`): the least work any Python tool does on the same bytes,
every input file read, decompressed and parsed once with orjson (a file whole,
else line by line). The recordings and stream rows run it, the baseline and the
job on the big input and on a small input of the same generator (1 MB), and show
each one's marginal cost (big minus small CPU seconds: start-up left out) over
the floor's marginal cost ("x floor").

    .venv/bin/python -m bench.run                       # 100 MB inputs, 3 runs each
    .venv/bin/python -m bench.run --size 20MB --runs 5 --only recordings stream
    .venv/bin/python -m bench.run --only big --big 2GB  # the memory run (minutes)
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.generate import generate, parse_size, write_declarations

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT / "bench" / "data"
ALL = ["readers", "recordings", "stream", "stateful", "fixed", "onemb"]
SMALL = 1_000_000  #: the small input of the marginal figures (bytes)

#: the performance targets
TARGET_READERS = 65_000  # records/s, all three readers per record
TARGET_REC_RATIO = 0.7
TARGET_REC_EVENTS = 60_000
TARGET_STREAM_RATIO = 0.4
TARGET_STATEFUL = 5_000
TARGET_BIG_RSS = 2 << 30
#: marginal CPU over the parse floor's, and the fixed cost beyond `import apache_beam`
TARGET_REC_FLOOR = 2.5
TARGET_STREAM_FLOOR = 3.5
TARGET_FIXED = 0.5


# --------------------------------------------------------------------------
# Workers (run in a pinned child process; print one JSON line)
# --------------------------------------------------------------------------


def _worker_readers(args: argparse.Namespace) -> dict:
    from bench.bench_readers import _all_three, time_runs
    from bench.corpus import make_corpus

    corpus = make_corpus(args.n, args.seed)
    # As bench_readers does: passes over the corpus after a warm-up, the median kept. The first
    # pass of a process is about 5% slower than the next ones (allocator and caches filling up).
    cpu, wall = time_runs(_all_three, corpus, 3)
    return {"cpu": statistics.median(cpu), "seconds": statistics.median(wall), "records": len(corpus)}


def _worker_baseline(args: argparse.Namespace) -> dict:
    from bench.baseline import list_inputs, run_baseline
    from footprint_audit.schemas.declarations import load_declarations
    from footprint_audit.transforms.write.shards import shards_for

    inputs = list_inputs(args.input)
    shards = shards_for(sum(s for _, s in inputs))
    decl = load_declarations(args.declarations)
    c, t = time.process_time(), time.perf_counter()
    run_baseline([p for p, _ in inputs], args.output, decl, shards)
    return {"seconds": time.perf_counter() - t, "cpu": time.process_time() - c}


def floor_parse(paths: list[str]) -> int:
    """The floor: each file read, gzip / zstd undone, and parsed once with orjson (whole, else
    line by line; an SSE `data:` line without its field name). Returns the values parsed."""
    import gzip

    import orjson
    import zstandard

    loads, error = orjson.loads, orjson.JSONDecodeError
    n = 0
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        elif data[:4] == b"\x28\xb5\x2f\xfd":
            data = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True).read()
        try:
            loads(data)
            n += 1
            continue
        except error:
            pass
        for line in data.split(b"\n"):
            if line[:5] == b"data:":
                line = line[5:]
            if line.strip():
                try:
                    loads(line)
                    n += 1
                except error:
                    pass
    return n


def _worker_floor(args: argparse.Namespace) -> dict:
    from bench.baseline import list_inputs

    paths = [p for p, _ in list_inputs(args.input)]
    c, t = time.process_time(), time.perf_counter()
    values = floor_parse(paths)
    return {"seconds": time.perf_counter() - t, "cpu": time.process_time() - c, "values": values}


def _worker_beam(args: argparse.Namespace) -> dict:
    from footprint_audit.pipelines.reassess import command as reassess

    argv = ["--input", args.input, "--output", args.output, "--declarations", args.declarations,
            "--no-progress", "--quiet", "--direct_num_workers=1"]
    c, t = time.process_time(), time.perf_counter()
    code = reassess.run(argv)
    if code:
        raise SystemExit(code)
    return {"seconds": time.perf_counter() - t, "cpu": time.process_time() - c}


def stateful_events(path: str, limit: int) -> list:
    """Keyed call events `(run_id, ((call_id, type, held bytes, behind_ms, event_ms),))` of an event-stream dataset,
    with event times."""
    from apache_beam.transforms.window import TimestampedValue

    from bench.baseline import list_inputs
    from footprint_audit.schemas.events import Event
    from footprint_audit.transforms.calls.from_events import CALL, classify_event
    from footprint_audit.transforms.decode.sources import open_source
    from footprint_audit.transforms.join.held_codec import encode_held

    out: list = []
    for name, _size in list_inputs(path):
        for item in open_source(name).streamed:
            if isinstance(item, Event) and classify_event(item) is CALL:
                ms = item.meta.get("wallClockMs")
                held = (item.payload["toolCallId"], item.type, encode_held(name, item), 0, ms)
                out.append(TimestampedValue((item.run_id, (held,)), ms / 1000))
                if len(out) >= limit:
                    return out
    return out


def run_stateful(elements: list, runner: str = "direct", experiments: list[str] | None = None) -> int:
    """The stateful join over `elements` through TestStream on a local streaming runner; returns how
    many readings rows came out. `runner`: "direct" (BundleBasedDirectRunner, what the tests use)
    or "fnapi" (FnApiRunner)."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.testing.test_stream import TestStream

    from footprint_audit.schemas.declarations import Declarations
    from footprint_audit.transforms.stream.join import StatefulCallJoin

    elements = sorted(elements, key=lambda tv: tv.timestamp)
    ts = TestStream()
    step = 2000
    for i in range(0, len(elements), step):
        chunk = elements[i : i + step]
        ts = ts.add_elements(chunk).advance_watermark_to(chunk[-1].timestamp)
    ts = ts.advance_watermark_to_infinity()
    opts = ["--streaming"] + [f"--experiments={e}" for e in (experiments or [])]
    if runner == "fnapi":
        from footprint_audit.pipelines.local_runner import local_runner

        beam_runner: Any = local_runner()
    else:
        from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner

        beam_runner = BundleBasedDirectRunner()

    counts = tempfile.mkdtemp(prefix="bench-stateful-")

    class _Count(beam.DoFn):
        """Counts the readings rows into a file per bundle (a runner may copy the DoFn)."""

        def start_bundle(self) -> None:
            self.n = 0

        def process(self, row: dict) -> Any:
            self.n += 1

        def finish_bundle(self) -> None:
            if self.n:
                with open(os.path.join(counts, f"{os.getpid()}-{id(self)}-{time.perf_counter_ns()}"), "w") as f:
                    f.write(str(self.n))

    p = beam.Pipeline(runner=beam_runner, options=PipelineOptions(opts))
    out = p | ts | StatefulCallJoin(Declarations(), grace_seconds=30, allowed_lateness_seconds=60)
    out["readings"] | beam.ParDo(_Count())
    # Beam's test-only runner-API round trip would pickle and bz2-compress the TestStream (all the
    # events) with the pipeline's definition: a cost of the harness, not of the join (bench/README.md).
    p.run(test_runner_api=False).wait_until_finish()
    n = sum(int(Path(counts, f).read_text()) for f in os.listdir(counts))
    shutil.rmtree(counts, ignore_errors=True)
    return n


def _worker_stateful(args: argparse.Namespace) -> dict:
    elements = stateful_events(args.input, args.n)
    c, t = time.process_time(), time.perf_counter()
    readings = run_stateful(elements, args.runner)
    return {"seconds": time.perf_counter() - t, "cpu": time.process_time() - c, "events": len(elements), "readings": readings}


def _worker_phases(args: argparse.Namespace) -> dict:
    from bench.phases import run_phases

    return run_phases(args.input, args.output, args.declarations)


WORKERS = {"readers": _worker_readers, "baseline": _worker_baseline, "beam": _worker_beam, "stateful": _worker_stateful,
           "floor": _worker_floor, "phases": _worker_phases}


def _vm_hwm() -> int:
    """This process's peak RSS (`VmHWM`, bytes); `ru_maxrss` is no good here: it survives exec."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def worker_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=sorted(WORKERS))
    ap.add_argument("--input")
    ap.add_argument("--output")
    ap.add_argument("--declarations")
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--runner", default="direct")
    args = ap.parse_args(argv)
    res = WORKERS[args.kind](args)
    res["hwm"] = _vm_hwm()
    print("RESULT " + json.dumps(res), flush=True)
    return 0


# --------------------------------------------------------------------------
# The parent: pinned children, peak RSS, medians, the table
# --------------------------------------------------------------------------


def _keep_off(cpu: int) -> int | None:
    """Pin this process (the harness, which samples the worker's memory every 20 ms) to a CPU other
    than the measured one, so that it never shares the worker's core; the CPU it took, or None."""
    try:
        others = sorted(os.sched_getaffinity(0) - {cpu})
        if not others:
            return None
        os.sched_setaffinity(0, {others[0]})
        return others[0]
    except (AttributeError, OSError):
        return None


def spawn(kind: str, cpu: int, **kw: Any) -> dict:
    """Run one worker pinned to `cpu`; its JSON result plus `peak_rss` (bytes, process tree)."""
    import psutil

    cmd = [sys.executable, "-m", "bench.run", "--worker", kind]
    for k, v in kw.items():
        cmd += [f"--{k}", str(v)]
    pin = None
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", str(cpu)] + cmd
    elif hasattr(os, "sched_setaffinity"):
        def pin() -> None:
            os.sched_setaffinity(0, {cpu})
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=pin)
    peak = 0
    ps = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            tree = [ps] + ps.children(recursive=True)
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.02)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} failed ({proc.returncode}):\n{err.decode()[-3000:]}")
    line = next(s for s in out.decode().splitlines() if s.startswith("RESULT "))
    res = json.loads(line[len("RESULT "):])
    res["peak_rss"] = max(peak, res.get("hwm", 0))
    res["wall"] = time.perf_counter() - t0
    return res


def dataset(layout: str, size: int, seed: int, data: Path, big: bool = True) -> tuple[str, str]:
    """Generate (once) and return (input folder, declarations file)."""
    name = f"{layout}-{size}-s{seed}{'' if big else '-nobig'}"
    folder = data / name
    decl = data / f"{name}.declarations.json"
    done = data / f"{name}.done"
    if not done.exists():
        shutil.rmtree(folder, ignore_errors=True)
        t = time.perf_counter()
        st = generate(folder, size, seed, layout, big=big)
        done.write_text(st.line())
        print(f"generated {folder}: {st.line()} ({time.perf_counter() - t:.0f}s)", file=sys.stderr)
    write_declarations(decl)
    return str(folder), str(decl)


def input_bytes(pattern: str) -> int:
    from bench.baseline import list_inputs

    return sum(size for _, size in list_inputs(pattern))


def table_counts(out: str) -> dict:
    """Events (runs.events + run-less dead letters), readings, and the tables' rows for comparison."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def load(table: str) -> pa.Table:
        files = sorted(glob.glob(os.path.join(out, table, "**", "*.parquet"), recursive=True))  # flat or partitioned
        return pa.concat_tables([pq.read_table(f) for f in files])

    runs, dead, readings = load("runs"), load("dead_letters"), load("readings")
    events = sum(runs.column("events").to_pylist()) + dead.column("run_id").null_count
    return {"events": events, "readings": readings.num_rows, "tables": (readings, dead, runs)}


def same_tables(a: tuple, b: tuple) -> bool:
    """Row-for-row equality of two outputs (order-free; `emitted_at` is null in batch)."""
    for ta, tb in zip(a, b):
        key = lambda r: json.dumps(r, sort_keys=True, default=str)  # noqa: E731
        if sorted(map(key, ta.to_pylist())) != sorted(map(key, tb.to_pylist())):
            return False
    return True


def _secs(r: dict) -> float:
    """The figure a rate is computed from: the worker's CPU seconds (wall when it has none)."""
    return r.get("cpu", r["seconds"])


def _fmt_rss(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"


#: The columns of the main table.
HEAD = ["benchmark", "input", "median CPU s", "events/s", "MB/s", "peak RSS", "ratio", "x floor", "target", "met"]


class Table:
    def __init__(self, head: list[str] = HEAD) -> None:
        self.head = head
        self.rows: list[list[str]] = []

    def add(self, *cells: Any) -> None:
        self.rows.append([str(c) for c in cells])
        print("  " + " | ".join(str(c) for c in cells), file=sys.stderr, flush=True)

    def render(self) -> str:
        head = self.head
        rows = [head] + self.rows
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
        lines.insert(1, "-+-".join("-" * w for w in widths))
        return "\n".join(lines)


def bench_pair(table: Table, layout: str, pattern: str, decl: str, runs: int, cpu: int,
               target_ratio: float, target_events: int | None, label: str, small: str | None = None,
               target_floor: float | None = None) -> dict:
    """Baseline and Beam alternated on `pattern`; with `small` (the same generator's small input)
    also the floor on both, and the baseline and Beam on the small one, for the marginal ratios."""
    size = input_bytes(pattern)
    kinds = ("floor", "baseline", "beam") if small else ("baseline", "beam")
    res: dict[str, list[dict]] = {k: [] for k in kinds}
    res_small: dict[str, list[dict]] = {k: [] for k in kinds}
    equal = True
    counts = None
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        for i in range(runs):
            outs = {}
            for kind in kinds:
                out = os.path.join(tmp, f"{kind}-{i}")
                r = spawn(kind, cpu, input=pattern, output=out, declarations=decl)
                res[kind].append(r)
                outs[kind] = out
            cb, cm = table_counts(outs["baseline"]), table_counts(outs["beam"])
            counts = cm
            if i == 0:
                equal = same_tables(cb["tables"], cm["tables"]) and cb["events"] == cm["events"]
            for o in outs.values():
                shutil.rmtree(o, ignore_errors=True)
            if small:
                for kind in kinds:
                    out = os.path.join(tmp, f"small-{kind}-{i}")
                    res_small[kind].append(spawn(kind, cpu, input=small, output=out, declarations=decl))
                    shutil.rmtree(out, ignore_errors=True)
    events = counts["events"]
    med = {k: statistics.median(_secs(r) for r in v) for k, v in res.items()}
    wall = {k: statistics.median(r["seconds"] for r in v) for k, v in res.items()}
    rss = {k: max(r["peak_rss"] for r in v) for k, v in res.items()}
    rate = {k: events / med[k] for k in med if k != "floor"}
    ratio = rate["beam"] / rate["baseline"]
    marginal: dict[str, float] = {}
    over: dict[str, float] = {}
    if small:
        med_small = {k: statistics.median(_secs(r) for r in v) for k, v in res_small.items()}
        marginal = {k: med[k] - med_small[k] for k in kinds}
        over = {k: marginal[k] / marginal["floor"] for k in kinds}
    desc = f"{size / 1e6:,.0f} MB, {events:,} ev"
    x = (lambda k: f"{over[k]:.2f}") if small else (lambda k: "")  # noqa: E731
    if small:
        table.add(f"{label}: parse floor", desc, f"{med['floor']:.2f}", f"{events / med['floor']:,.0f}",
                  f"{size / 1e6 / med['floor']:.1f}", _fmt_rss(rss["floor"]), "", x("floor"), "", "")
    table.add(f"{label}: baseline", desc, f"{med['baseline']:.2f}", f"{rate['baseline']:,.0f}",
              f"{size / 1e6 / med['baseline']:.1f}", _fmt_rss(rss["baseline"]), "1.00", x("baseline"), "", "")
    target = f">= {target_ratio}x" + (f", >= {target_events:,}/s" if target_events else "")
    met = ratio >= target_ratio and (target_events is None or rate["beam"] >= target_events)
    if small and target_floor:
        target += f", <= {target_floor}x floor"
        met = met and over["beam"] <= target_floor
    table.add(f"{label}: Beam", desc, f"{med['beam']:.2f}", f"{rate['beam']:,.0f}",
              f"{size / 1e6 / med['beam']:.1f}", _fmt_rss(rss["beam"]), f"{ratio:.2f}", x("beam"), target,
              ("yes" if met else "NO") + ("" if equal else " (rows differ!)"))
    return {"events": events, "bytes": size, "median_cpu": med, "median_wall": wall, "rate": rate, "ratio": ratio,
            "marginal_cpu": marginal, "over_floor": over,
            "rss": rss, "equal": equal, "runs": {k: [(_secs(r), r["seconds"]) for r in v] for k, v in res.items()},
            "small_runs": {k: [_secs(r) for r in v] for k, v in res_small.items()}}


def _process_cpu(cmd: list[str], cpu: int) -> float:
    """User + system CPU seconds of one whole process (`cmd`, pinned to `cpu`), from `wait4`."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    pin = (lambda: os.sched_setaffinity(0, {cpu})) if hasattr(os, "sched_setaffinity") else None
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=pin)
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode:
        raise RuntimeError(f"{cmd} failed ({proc.returncode}):\n{err[-3000:]}")
    return usage.ru_utime + usage.ru_stime


def bench_fixed(table: Table, data: Path, args: argparse.Namespace) -> dict:
    """The job's fixed cost: `reassess --workers 1` on one small recording file, as a whole
    process, minus `python -c "import apache_beam"`; the two alternated, medians of `--runs`."""
    folder, decl = dataset("recordings", SMALL, args.seed, data)
    one = data / "onefile"
    shutil.rmtree(one, ignore_errors=True)
    one.mkdir()
    first = sorted(Path(folder).rglob("run-*.json"))[0]  # a whole recording (the bad files are tiny)
    shutil.copy(first, one / first.name)
    job, imp = [], []
    with tempfile.TemporaryDirectory(prefix="bench-fixed-") as tmp:
        for i in range(max(args.runs, 3)):
            imp.append(_process_cpu([sys.executable, "-c", "import apache_beam"], args.cpu))
            job.append(_process_cpu([sys.executable, "-m", "footprint_audit.pipelines.cli", "reassess", "--input", str(one),
                                     "--output", os.path.join(tmp, f"o{i}"), "--declarations", decl, "--workers", "1",
                                     "--no-progress", "--quiet"], args.cpu))
    med_job, med_imp = statistics.median(job), statistics.median(imp)
    fixed = med_job - med_imp
    table.add("fixed cost: reassess on one file", f"{first.stat().st_size:,} B", f"{med_job:.2f}", "", "", "",
              f"import apache_beam {med_imp:.2f} s", f"+{fixed:.2f} s", f"<= +{TARGET_FIXED} s",
              "yes" if fixed <= TARGET_FIXED else "NO")
    return {"job": job, "import_beam": imp, "fixed": fixed}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        return worker_main(argv[1:])
    ap = argparse.ArgumentParser(description="run every benchmark and print the table")
    ap.add_argument("--size", default="100MB", help="input size of the recordings / stream benches (default 100MB)")
    ap.add_argument("--runs", type=int, default=3, help="runs per measurement; medians are reported")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cpu", type=int, default=0, help="the CPU every measurement is pinned to")
    ap.add_argument("--only", nargs="*", default=None, help=f"some of {ALL + ['big']}")
    ap.add_argument("--readers-n", type=int, default=50_000)
    ap.add_argument("--stateful-n", type=int, default=20_000, help="keyed events through the stateful join")
    ap.add_argument("--big", default="2GB", help="input size of the `big` memory run")
    ap.add_argument("--data", default=str(DATA), help="where generated inputs are kept (reused)")
    ap.add_argument("--json", help="also write the results as JSON to this file")
    args = ap.parse_args(argv)
    only = args.only or ALL
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    size = parse_size(args.size)
    table = Table()
    results: dict[str, Any] = {}
    harness = _keep_off(args.cpu)
    print(f"python {sys.version.split()[0]}, pinned to CPU {args.cpu}, median of {args.runs} runs"
          f"{f', the harness on CPU {harness}' if harness is not None else ''}", file=sys.stderr)

    if "readers" in only:
        rs = [spawn("readers", args.cpu, n=args.readers_n) for _ in range(args.runs)]
        med = statistics.median(_secs(r) for r in rs)
        rate = args.readers_n / med
        results["readers"] = {"rate": rate, "runs": [r["seconds"] for r in rs]}
        table.add("readers, all three per record", f"{args.readers_n:,} records", f"{med:.2f}", f"{rate:,.0f} rec/s", "",
                  _fmt_rss(max(r["peak_rss"] for r in rs)), "", "", f">= {TARGET_READERS:,} rec/s",
                  "yes" if rate >= TARGET_READERS else "NO")
    if "recordings" in only:
        pattern, decl = dataset("recordings", size, args.seed, data)
        small, _ = dataset("recordings", SMALL, args.seed, data)
        results["recordings"] = bench_pair(table, "recordings", pattern, decl, args.runs, args.cpu,
                                           TARGET_REC_RATIO, TARGET_REC_EVENTS, "reassess, recording files",
                                           small, TARGET_REC_FLOOR)
    if "stream" in only:
        pattern, decl = dataset("stream", size, args.seed, data)
        small, _ = dataset("stream", SMALL, args.seed, data)
        results["stream"] = bench_pair(table, "stream", pattern, decl, args.runs, args.cpu,
                                       TARGET_STREAM_RATIO, None, "reassess, JSON Lines/SSE", small, TARGET_STREAM_FLOOR)
    if "stateful" in only:
        pattern, _decl = dataset("stream", min(size, parse_size("20MB")), args.seed, data)
        rs = [spawn("stateful", args.cpu, input=pattern, n=args.stateful_n) for _ in range(args.runs)]
        med = statistics.median(_secs(r) for r in rs)
        events = rs[0]["events"]
        rate = events / med
        results["stateful"] = {"rate": rate, "events": events, "readings": rs[0]["readings"], "runs": [r["seconds"] for r in rs]}
        table.add("stateful streaming join (TestStream)", f"{events:,} keyed ev", f"{med:.2f}", f"{rate:,.0f}", "",
                  _fmt_rss(max(r["peak_rss"] for r in rs)), "", "", f">= {TARGET_STATEFUL:,}/s",
                  "yes" if rate >= TARGET_STATEFUL else "NO")
    if "fixed" in only:
        results["fixed"] = bench_fixed(table, data, args)
    if "onemb" in only:
        results["onemb"] = bench_onemb(table, data, args)
    if "phases" in only:
        phases_table = bench_phases(data, size, args)
        results["phases"] = phases_table["results"]
    if "big" in only:
        big = parse_size(args.big)
        pattern, decl = dataset("recordings", big, args.seed, data)
        with tempfile.TemporaryDirectory(prefix="bench-big-") as tmp:
            r = spawn("beam", args.cpu, input=pattern, output=os.path.join(tmp, "out"), declarations=decl)
            counts = table_counts(os.path.join(tmp, "out"))
        nbytes = input_bytes(pattern)
        results["big"] = {"seconds": r["seconds"], "cpu": _secs(r), "peak_rss": r["peak_rss"], "events": counts["events"],
                          "bytes": nbytes}
        secs = _secs(r)
        table.add("reassess, recording files: Beam memory", f"{nbytes / 1e6:,.0f} MB, {counts['events']:,} ev",
                  f"{secs:.1f}", f"{counts['events'] / secs:,.0f}", f"{nbytes / 1e6 / secs:.1f}",
                  _fmt_rss(r["peak_rss"]), "", "", "peak RSS < 2 GiB", "yes" if r["peak_rss"] < TARGET_BIG_RSS else "NO")
    if table.rows:
        print()
        print(table.render())
    if "phases" in only:
        print()
        print(phases_table["text"])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    return 0


def bench_phases(data: Path, size: int, args: argparse.Namespace) -> dict:
    """`bench.phases` on both layouts, the big and the small input alternated, `--runs` times: each
    phase's median marginal CPU (big minus small) and its ratio to the floor's, as a text table."""
    from bench.phases import PHASES

    names = ("floor",) + PHASES + ("values",)
    results: dict[str, Any] = {}
    for layout in ("recordings", "stream"):
        pattern, decl = dataset(layout, size, args.seed, data)
        small, _ = dataset(layout, SMALL, args.seed, data)
        big_runs, small_runs = [], []
        with tempfile.TemporaryDirectory(prefix="bench-phases-") as tmp:
            for i in range(args.runs):
                for where, runs in ((pattern, big_runs), (small, small_runs)):
                    out = os.path.join(tmp, f"{len(runs)}-{i}")
                    runs.append(spawn("phases", args.cpu, input=where, output=out, declarations=decl))
                    shutil.rmtree(out, ignore_errors=True)
        marginal = {n: statistics.median(r["cpu"][n] for r in big_runs) - statistics.median(r["cpu"][n] for r in small_runs)
                    for n in names}
        marginal["plain path"] = sum(marginal[n] for n in PHASES)
        results[layout] = {"marginal_cpu": marginal, "calls": big_runs[0]["calls"],
                           "runs": [r["cpu"] for r in big_runs], "small_runs": [r["cpu"] for r in small_runs]}
    table = Table(["phase", "recordings CPU s", "x floor", "JSON Lines/SSE CPU s", "x floor"])
    for n in names[:-1] + ("plain path", "values"):
        row = [n if n != "values" else "values (inside readers)"]
        for layout in ("recordings", "stream"):
            m = results[layout]["marginal_cpu"]
            row += [f"{m[n]:.3f}", f"{m[n] / m['floor']:.2f}"]
        table.add(*row)
    return {"results": results, "text": table.render()}


def bench_onemb(table: Table, data: Path, args: argparse.Namespace) -> dict:
    """Peak RSS of the Beam job: one run with one 1 MB result value vs the same run with a 1 KB value."""
    import orjson

    from bench.generate import _RunMaker, big_value

    folder = data / "onemb"
    shutil.rmtree(folder, ignore_errors=True)
    peaks: dict[str, int] = {}
    decl = write_declarations(data / "onemb.declarations.json")
    for name, size in (("small", 1_000), ("large", 1_000_000)):
        d = folder / name
        d.mkdir(parents=True)
        maker = _RunMaker(args.seed, big=False)
        run_id, session, evs, _snap, _calls, _bad = maker.make_run(1_790_000_000_000, n_calls=3)
        value = big_value(size, 3)
        evs = [e for e in evs if type(e) is dict]
        for e in evs:
            if type(e.get("type")) is str and e["type"].endswith("stream.tool_end"):
                e["payload"]["result"] = value
                e["payload"].pop("modelResult", None)
                break
        doc = {"format": "agentfootprint.recording.v1", "run": {"runId": run_id, "sessionId": session},
               "recording": {"events": evs}}
        (d / "run.json").write_bytes(orjson.dumps(doc))
        for kind in ("beam", "baseline"):
            with tempfile.TemporaryDirectory(prefix="bench-1mb-") as tmp:
                rs = [spawn(kind, args.cpu, input=str(d), output=os.path.join(tmp, f"o{i}"), declarations=decl)
                      for i in range(args.runs)]
            peaks[f"{kind}-{name}"] = int(statistics.median(r["peak_rss"] for r in rs))
    out: dict = {"peaks": peaks}
    for kind, label in (("baseline", "baseline"), ("beam", "Beam")):
        delta = peaks[f"{kind}-large"] - peaks[f"{kind}-small"]
        times = delta / 1e6
        out[f"{kind}_delta_over_value"] = times
        table.add(f"one 1 MB result value: {label} peak RSS", "1 run, 1 MB value", "", "", "",
                  _fmt_rss(peaks[f"{kind}-large"]), f"+{delta / 2**20:.1f} MiB = {times:.1f}x the value", "",
                  "a few x" if kind == "beam" else "", ("yes" if times <= 5 else "NO") if kind == "beam" else "")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
