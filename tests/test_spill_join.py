"""Bounded memory: the local runner's join and writer go through spill files, with the same tables.

`transforms.join.spilled` replaces the keyed `GroupByKey` of event streams on Beam's local
runner (the one Dataflow and Flink keep): the tables are byte for byte those of the
`GroupByKey` join, however small the partitions (split again down to one call), and no
spill file is left once the job ends. Peak memory is measured in `bench/scale.py`.
"""

from __future__ import annotations

import os
from pathlib import Path

import apache_beam as beam

from helpers import EXAMPLES
from footprint_audit.pipelines.reassess import command as reassess
from footprint_audit.pipelines.local_runner.plans import LocalPlan, Plan, runner_options
from footprint_audit.pipelines.output.publish import new_staging
from footprint_audit.schemas.declarations import load_declarations
from footprint_audit.schemas.manifest import MANIFEST_TABLE
from footprint_audit.transforms.join.spilled import _records, _Spiller

DECL = str(EXAMPLES / "declarations.json")
GLOB = str(EXAMPLES / "recordings" / "**")
TABLES = ("readings", "dead_letters", "runs")


def table_bytes(folder: str | os.PathLike) -> dict[str, bytes]:
    return {f"{t}/{p.name}": p.read_bytes() for t in TABLES for p in sorted(Path(folder, t).glob("*.parquet"))}


def run_built(tmp: Path, name: str, spill: str | None, max_partition_bytes: int = 64 << 20) -> dict[str, bytes]:
    """Build and run the job with the GroupByKey join (`spill` None) or the spill join; its staged tables."""
    options, runner = runner_options([])
    staging = new_staging(str(tmp / name))
    p = beam.Pipeline(runner=runner, options=options)
    reassess.build_pipeline(p, [GLOB], staging, load_declarations(DECL), 0, progress=False,
                            output=str(tmp / name),
                            plan=Plan(max_partition_bytes) if spill is None else LocalPlan(spill, 1, max_partition_bytes))
    p.run().wait_until_finish()
    return table_bytes(staging)


def test_the_spill_join_writes_the_bytes_of_the_group_by_key_join_even_split_down_to_single_calls(tmp_path):
    grouped = run_built(tmp_path, "grouped", None)
    assert grouped and any(k.startswith("readings/") for k in grouped)
    assert run_built(tmp_path, "spilled", str(tmp_path / "spill-a")) == grouped
    # One byte per partition: every partition is split again, level after level, until calls stand alone.
    assert run_built(tmp_path, "split", str(tmp_path / "spill-b"), max_partition_bytes=1) == grouped


def test_the_cli_leaves_no_spill_file_and_its_option_keeps_the_tables(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    assert reassess.run(["--input", GLOB, "--output", str(first), "--declarations", DECL, "--no-progress", "--quiet"]) == 0
    assert reassess.run(["--input", GLOB, "--output", str(second), "--declarations", DECL, "--no-progress", "--quiet",
                         "--spill-partition-bytes", "200"]) == 0
    assert table_bytes(first) == table_bytes(second)
    for out in (first, second):
        assert sorted(os.listdir(out)) == sorted(["_FOOTPRINT_AUDIT", *TABLES, MANIFEST_TABLE])  # no _staging, no _spill


def test_spilled_records_read_back_in_order_whatever_their_bytes(tmp_path):
    spiller = _Spiller(str(tmp_path), 3, 0, "t")
    records = ([(f"run\x00c{i}".encode(), bytes([i % 256]) * i) for i in range(300)]
               + [("r\udc80\x00c".encode("utf-8", "surrogatepass"), b"")])
    for key, held in records:
        spiller.add(key, held)
    files = spiller.close()
    assert 1 < len(files) <= 3
    got = [r for path in files.values() for r in _records(path)]
    assert sorted(got) == sorted(records)
    for path in files.values():  # each partition's records keep the order they were added in
        mine = list(_records(path))
        assert mine == [r for r in records if r in set(mine)]
