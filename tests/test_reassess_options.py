"""The batch job's launch settings (`pipelines.local_runner.plans`): which runner, whether files are spread, Beam's type check,
and the job's counters (added up per bundle) against the tables it wrote."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import DirectOptions, TypeOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from helpers import EXAMPLES, load_table
from footprint_audit.pipelines.reassess import command as reassess
from footprint_audit.pipelines.local_runner.plans import LocalPlan, runner_options
from footprint_audit.pipelines.output.publish import new_staging
from footprint_audit.schemas.declarations import load_declarations


class _Labels(beam.pipeline.PipelineVisitor):
    """Gathers the graph's transform labels."""

    def __init__(self, labels: set) -> None:
        self.labels = labels

    def enter_composite_transform(self, node) -> None:
        self.labels.add(node.full_label)

    def visit_transform(self, node) -> None:
        self.labels.add(node.full_label)


def test_the_local_runner_with_one_worker_spreads_files_and_type_checks_as_beam_does():
    # spread with one worker too: the read stage then batches the rows it makes (the file count is summed before it)
    options, runner = runner_options(["--direct_num_workers=1"])
    assert isinstance(runner, FnApiRunner)
    p = beam.Pipeline(runner=runner, options=options)
    reassess.build_pipeline(p, ["a.json"], "/nonexistent", load_declarations(str(EXAMPLES / "declarations.json")), 0,
                            progress=False, output="/nonexistent-out", plan=LocalPlan("/nonexistent-spill"))
    labels = set()
    p.visit(_Labels(labels))
    assert "SpreadFiles" in labels
    assert options.view_as(DirectOptions).direct_num_workers == 1
    assert options.view_as(TypeOptions).pipeline_type_check is True


def test_several_local_workers_get_the_files_spread():
    options, runner = runner_options(["--direct_num_workers=2"])
    assert isinstance(runner, FnApiRunner)
    assert options.view_as(DirectOptions).direct_num_workers == 2


def test_the_type_check_can_be_turned_off_with_beams_own_flag():
    options, _runner = runner_options(["--no_pipeline_type_check"])
    assert options.view_as(TypeOptions).pipeline_type_check is False


def test_a_named_runner_is_not_pinned_and_its_flags_are_kept_as_given():
    options, runner = runner_options(["--runner=FlinkRunner", "--flink_master=[local]"])
    assert runner is None
    assert options.get_all_options()["flink_master"] == "[local]"
    assert options.view_as(TypeOptions).pipeline_type_check is True


def _counter(result, namespace: str, name: str) -> int:
    found = result.metrics().query(MetricsFilter().with_namespace(namespace).with_name(name))["counters"]
    return sum(c.committed for c in found)


def test_the_counters_match_the_tables(tmp_path):
    files = sorted(str(p) for p in (EXAMPLES / "recordings").rglob("*") if p.is_file())
    options, runner = runner_options([])
    staging = new_staging(str(tmp_path))
    p = beam.Pipeline(runner=runner, options=options)
    reassess.build_pipeline(p, files, staging, load_declarations(str(EXAMPLES / "declarations.json")), 1,
                            progress=False)
    result = p.run()
    result.wait_until_finish()
    readings = load_table(staging, "readings")
    assert readings, "the examples have calls"
    assert _counter(result, "read_calls", "readings") == len(readings)
    assert _counter(result, "read", "files") == len(files)


def test_a_folder_lists_every_file_at_any_depth_with_its_size(tmp_path, monkeypatch):
    root = tmp_path / "in"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "deep.json").write_bytes(b"x" * 7)
    (root / "top.jsonl").write_bytes(b"yy")
    (root / ".hidden.json").write_bytes(b"")
    (root / "link.json").symlink_to(root / "top.jsonl")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "not-walked.json").write_bytes(b"z")
    (root / "linked-folder").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    from footprint_audit.pipelines.output.publish import STAGING

    (root / STAGING / "readings").mkdir(parents=True)
    (root / STAGING / "readings" / "part.parquet").write_bytes(b"p")
    monkeypatch.chdir(tmp_path)
    # A folder named _staging in an input is an input like any other (only the output's is left out);
    # a link to a folder is listed, not walked: the reader makes it an `unreadable` dead letter.
    expected = [("in/.hidden.json", 0), ("in/_staging/readings/part.parquet", 1), ("in/a/b/deep.json", 7),
                ("in/link.json", 2), ("in/linked-folder", 0), ("in/top.jsonl", 2)]
    assert reassess.expand_inputs(["./in"]) == expected
    assert reassess.expand_inputs(["in/"]) == expected
