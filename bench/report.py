"""`footprint-audit report` on a large output: its queries and its HTML page, timed.

The output is the bundled examples' readings repeated `--copies` times (each copy under its own
run ids, its calls moved 3 hours later per copy, so the span and the tools' timelines grow),
beside the examples' runs and dead letters. It times, in CPU seconds of this process (median of
`--runs`): the queries of the text report, the queries of the page (`collect(with_calls=True)`),
and building the page; once with the summaries' shared views computed once
(`report.MATERIALIZED`, what the command does) and once with every view read as a view.

    .venv/bin/python -m bench.report                 # 3,000 copies: 189,000 readings
    .venv/bin/python -m bench.report --copies 300 --runs 3
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent


def make_output(root: Path, copies: int) -> Path:
    """The examples' output, its readings repeated `copies` times."""
    from footprint_audit.pipelines import reassess

    examples = root / "examples-out"
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            code = reassess.run(["--input", "examples/recordings/**", "--output", str(examples), "--declarations",
                                 "examples/declarations.json", "--no-progress", "--quiet"])
    finally:
        os.chdir(cwd)
    if code != 0:
        raise SystemExit(f"reassess on the examples exited {code}")
    big = root / "big"
    for table in ("runs", "dead_letters"):
        (big / table).mkdir(parents=True)
        for f in (examples / table).glob("*.parquet"):
            (big / table / f.name).write_bytes(f.read_bytes())
    one = pq.read_table(next((examples / "readings").glob("*.parquet")))
    parts = []
    for k in range(copies):
        run = pc.binary_join_element_wise(one.column("run_id"), pa.scalar(f"-{k}"), "")
        ended = pc.add(one.column("ended_at"), pa.scalar(datetime.timedelta(hours=3 * k)))
        part = one.set_column(one.schema.get_field_index("run_id"), one.schema.field("run_id"), run)
        part = part.set_column(one.schema.get_field_index("ended_at"), one.schema.field("ended_at"),
                               ended.cast(one.schema.field("ended_at").type))
        parts.append(part.cast(one.schema))
    (big / "readings").mkdir(parents=True)
    pq.write_table(pa.concat_tables(parts), big / "readings" / "part-00000-of-00001.parquet", compression="zstd")
    return big


def time_report(out: Path, runs: int) -> dict[str, float]:
    """Median CPU seconds of the text queries, the page's queries and building the page."""
    from footprint_audit.pipelines import report
    from footprint_audit.pipelines.report_html import build_html

    figures: dict[str, list[float]] = {"text queries": [], "page queries": [], "page": []}
    size = 0
    for _ in range(runs):
        t = time.process_time()
        con = report.connect(out, report.check_output_dir(out))
        report.render_text(report.collect(con, out))
        con.close()
        figures["text queries"].append(time.process_time() - t)
        t = time.process_time()
        con = report.connect(out, report.check_output_dir(out))
        summary = report.collect(con, out, with_calls=True)
        con.close()
        figures["page queries"].append(time.process_time() - t)
        t = time.process_time()
        size = len(build_html(summary).encode("utf-8"))
        figures["page"].append(time.process_time() - t)
    result = {k: statistics.median(v) for k, v in figures.items()}
    result["page MB"] = size / 1e6
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    from footprint_audit.pipelines import report

    with tempfile.TemporaryDirectory() as tmp:
        out = make_output(Path(tmp), args.copies)
        readings = pq.read_metadata(next((out / "readings").glob("*.parquet"))).num_rows
        shared = time_report(out, args.runs)
        kept, report.MATERIALIZED = report.MATERIALIZED, ()
        try:
            views = time_report(out, args.runs)
        finally:
            report.MATERIALIZED = kept
    print(f"report on {readings:,} readings (median of {args.runs}, CPU seconds of this process)")
    print(f"  {'':<14} {'computed once':>14} {'as views':>10} {'ratio':>7}")
    for key in ("text queries", "page queries", "page"):
        ratio = views[key] / shared[key] if shared[key] else float("nan")
        print(f"  {key:<14} {shared[key]:>14.2f} {views[key]:>10.2f} {ratio:>6.1f}x")
    print(f"  page size {shared['page MB']:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
