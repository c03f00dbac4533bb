"""Many files: the job lists its inputs on its workers, so its graph never holds the file list.

200,000 small files in 200 folders: the real CLI reads every one (each in `runs`, each
call read), and the pipeline's definition (`Pipeline.to_runner_api()`, what a runner
such as Dataflow is sent) is the same size for this folder as for a folder of one file:
it holds the pattern, not the files. Time to first read is in the benchmark
(`python -m bench.scale files`, bench/scale.py), not here.
"""

from __future__ import annotations

import json
import os

import apache_beam as beam
import pyarrow.parquet as pq

from helpers import reassess_cli
from footprint_audit.pipelines.reassess import command as reassess
from footprint_audit.pipelines.local_runner.plans import runner_options
from footprint_audit.pipelines.output.publish import new_staging
from footprint_audit.schemas.declarations import Declarations

FILES = 200_000
PER_FOLDER = 1_000


def write_small_files(root: str, n: int) -> None:
    """`n` events arrays of one call each (about 250 bytes), `PER_FOLDER` to a folder."""
    for i in range(n):
        folder = os.path.join(root, f"{i // PER_FOLDER:04d}")
        if i % PER_FOLDER == 0:
            os.makedirs(folder)
        run = f"run-{i:06d}"
        events = [
            {"type": "agentfootprint.stream.tool_start", "payload": {"toolCallId": "c", "toolName": "t"},
             "meta": {"runId": run}},
            {"type": "agentfootprint.stream.tool_end", "payload": {"toolCallId": "c", "result": {"rows": [i]}},
             "meta": {"runId": run}},
        ]
        with open(os.path.join(folder, f"{i:06d}.json"), "w", encoding="utf-8") as f:
            json.dump(events, f)


def definition_size(pattern: str, out: str) -> int:
    """The serialized size of the job's pipeline definition for `pattern` (built, not run)."""
    options, runner = runner_options([])
    p = beam.Pipeline(runner=runner, options=options)
    reassess.build_pipeline(p, [pattern], new_staging(out), Declarations({}), 0, progress=False,
                            output=out)
    return len(p.to_runner_api().SerializeToString())


def test_two_hundred_thousand_files_are_read_and_the_graph_holds_only_the_pattern(tmp_path):
    big, small = str(tmp_path / "many"), str(tmp_path / "once")
    write_small_files(big, FILES)
    write_small_files(small, 1)
    # The same pattern length for both folders: the definitions differ only by how their pickled
    # parts compress (tens of bytes), where the 200,000 names would add about 13 MB.
    assert len(big) == len(small)
    big_size = definition_size(big, str(tmp_path / "o1"))
    assert abs(big_size - definition_size(small, str(tmp_path / "o2"))) < 1_000
    assert big_size < 200_000  # the whole job's graph, a small fraction of Dataflow's ~10 MB limit

    out = tmp_path / "out"
    res = reassess_cli("--input", big, "--output", str(out), "--no-progress", "--quiet", timeout=1200)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stderr
    runs = pq.read_table(out / "runs", columns=["source_file", "events", "events_used"])
    assert runs.num_rows == FILES
    assert len(set(runs.column("source_file").to_pylist())) == FILES
    assert set(runs.column("events_used").to_pylist()) == {2}
    assert pq.read_table(out / "readings", columns=["run_id"]).num_rows == FILES
    assert pq.read_table(out / "dead_letters", columns=["reason"]).num_rows == 0
