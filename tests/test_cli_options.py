"""The command line: unknown options refused, Beam's kept, `--version`, `--summary-json`,
and the `--max-dead-letter-rate` gate, through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import ROOT, assert_accounted, load_table, one_sentence, reassess_cli
from footprint_audit.pipelines.options.check import OptionsError, check_beam_args
from test_cli_inputs import run_file


@pytest.fixture
def inp(tmp_path):
    run_file(tmp_path / "in" / "run.jsonl", "r-opt")
    (tmp_path / "in" / "broken.json").write_text("{not json")
    return tmp_path / "in"


def test_a_mistyped_option_is_a_usage_error_naming_it_with_a_close_match(tmp_path, inp):
    decl = tmp_path / "decl.json"
    decl.write_text('{"tools": {}}')
    res = reassess_cli("--input", str(inp), "--output", str(tmp_path / "out"), "--declarationz", str(decl))
    said = one_sentence(res, 2)
    assert said == "footprint-audit reassess: unknown option --declarationz: did you mean --declarations?"
    assert not (tmp_path / "out").exists()  # nothing was made, nothing was run


@pytest.mark.parametrize("args, words", [
    (["--runer", "DirectRunner"], "unknown option --runer: did you mean --runner?"),
    (["--no-such-flag"], "unknown option --no-such-flag"),
    (["stray"], "unexpected argument 'stray'"),
    (["--direct_num_workers=many"], "--direct_num_workers: invalid int value: 'many'"),
    (["--workers", "0"], "argument --workers: 0 is not a whole number of 1 or more"),
    (["--shards", "-1"], "argument --shards: -1 is not a whole number of 0 or more"),
    (["--max-event-bytes", "0"], "argument --max-event-bytes: 0 is not a whole number of 1 or more"),
    (["--spill-partition-bytes", "lots"], "argument --spill-partition-bytes: lots is not a whole number of 1 or more"),
])
def test_other_arguments_neither_this_tool_nor_beam_takes_are_refused(tmp_path, inp, args, words):
    said = one_sentence(reassess_cli("--input", str(inp), "--output", str(tmp_path / "out"), *args), 2)
    assert words in said


def test_beam_options_still_pass_through_and_the_job_runs(tmp_path, inp):
    res = reassess_cli("--input", str(inp), "--output", str(tmp_path / "out"), "--no-progress", "--quiet",
                       "--direct_num_workers=1", "--job_name", "audit-job", "--experiments", "x", "--no_pipeline_type_check")
    assert res.returncode == 0 and res.stderr == "", res.stderr[-3000:]
    assert_accounted(tmp_path / "out", [str(inp / "run.jsonl"), str(inp / "broken.json")])


def test_runner_options_of_flink_and_dataflow_are_known():
    check_beam_args(["--runner=FlinkRunner", "--flink_master=[local]", "--environment_type=LOOPBACK",
                     "--flink_job_server_jar", "x.jar", "--streaming", "--runner", "DataflowRunner", "--project", "p",
                     "--region", "r", "--temp_location", "gs://b/tmp", "--setup_file", "./setup.py"])
    with pytest.raises(OptionsError, match="did you mean --flink_master"):
        check_beam_args(["--flink_mastr=[local]"])


def test_flinks_bundle_options_reach_the_job_with_their_types():
    from apache_beam.options.pipeline_options import PipelineOptions

    from footprint_audit.pipelines.flink.state import FlinkDurabilityOptions

    args = ["--max_bundle_size=5000", "--max_bundle_time_mills", "2000", "--checkpointing_interval=10000"]
    check_beam_args(args)
    opts = PipelineOptions(args).view_as(FlinkDurabilityOptions)
    assert (opts.max_bundle_size, opts.max_bundle_time_mills, opts.checkpointing_interval) == (5000, 2000, 10000)


def test_version():
    for args in (["--version"], ["reassess", "--version"]):
        res = subprocess.run([sys.executable, "-m", "footprint_audit.pipelines.cli", *args], cwd=ROOT, capture_output=True,
                             text=True)
        assert res.returncode == 0 and res.stdout.startswith("footprint-audit ") and res.stderr == "", res


def test_summary_json_holds_the_summary_figures(tmp_path, inp):
    summary = tmp_path / "summary.json"
    res = reassess_cli("--input", str(inp), "--output", str(tmp_path / "out"), "--no-progress", "--summary-json", str(summary))
    assert res.returncode == 0, res.stderr
    figures = json.loads(summary.read_text())
    runs, dead = load_table(tmp_path / "out", "runs"), load_table(tmp_path / "out", "dead_letters")
    assert figures["runs"] == 1 and figures["readings"] == len(load_table(tmp_path / "out", "readings")) == 2
    assert figures["dead_letters"] == len(dead) == 1 and figures["dead_letters_by_reason"] == {"not-json": 1}
    assert figures["events"] == sum(r["events"] for r in runs) + 1 == 5
    assert figures["dead_letter_rate"] == pytest.approx(1 / 5)
    assert f"{figures['runs']} runs, {figures['events_in_runs']} events in runs" in res.stdout


def test_the_dead_letter_gate_exits_3_after_writing_the_tables(tmp_path, inp):
    out = tmp_path / "out"
    res = reassess_cli("--input", str(inp), "--output", str(out), "--no-progress", "--quiet", "--max-dead-letter-rate", "0.1")
    said = one_sentence(res, 3)
    assert said == "footprint-audit reassess: 1 dead letters in 5 events (20.00%) exceed --max-dead-letter-rate 0.1"
    assert load_table(out, "readings") and load_table(out, "dead_letters")  # the tables were written
    res = reassess_cli("--input", str(inp), "--output", str(out), "--no-progress", "--quiet", "--max-dead-letter-rate", "0.2")
    assert res.returncode == 0 and res.stderr == "", res.stderr
    said = one_sentence(reassess_cli("--input", str(inp), "--output", str(out), "--max-dead-letter-rate", "2"), 2)
    assert "--max-dead-letter-rate" in said


def test_the_dead_letter_rate_takes_a_percentage_and_says_its_forms(tmp_path, inp):
    res = reassess_cli("--input", str(inp), "--output", str(tmp_path / "out"), "--no-progress", "--quiet",
                       "--max-dead-letter-rate", "15%")
    assert one_sentence(res, 3).endswith("(20.00%) exceed --max-dead-letter-rate 0.15")
    for bad in ("five", "150%"):
        said = one_sentence(
            reassess_cli("--input", str(inp), "--output", str(tmp_path / "out"), "--max-dead-letter-rate", bad), 2)
        assert f"argument --max-dead-letter-rate: {bad} is not a share between 0 and 1 (0.05) or a percentage (5%)" in said, said


#: Runs the command line in a fresh interpreter, then says whether Beam was imported and the exit code.
WITHOUT_BEAM = """
import sys
from footprint_audit.pipelines import cli
try:
    code = cli.main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print("beam imported" if "apache_beam" in sys.modules else "beam not imported", code)
"""


def without_beam(*args: str) -> tuple[str, str]:
    """The command's stderr and its last stdout line (whether Beam was imported, and the exit code)."""
    res = subprocess.run([sys.executable, "-c", WITHOUT_BEAM, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    return res.stderr, res.stdout.splitlines()[-1]


@pytest.mark.parametrize("args", [
    ("reassess", "--help"), ("stream", "--help"), ("reassess", "--output", "out"), ("stream", "--output", "out"),
    ("reassess", "--input", "in", "--output", "out", "--max-dead-letter-rate", "x"),
], ids=["reassess-help", "stream-help", "reassess-no-input", "stream-no-source", "reassess-bad-value"])
def test_help_and_usage_mistakes_are_answered_before_beam_is_imported(args):
    err, last = without_beam(*args)
    assert last == f"beam not imported {0 if '--help' in args else 2}", err
    assert "Traceback" not in err


def test_a_glob_the_shell_expanded_is_refused_saying_to_quote_it(tmp_path):
    paths = [str(tmp_path / f"{name}.jsonl") for name in "abc"]
    err, last = without_beam("reassess", "--input", *paths, "--output", str(tmp_path / "out"))
    assert last == "beam not imported 2"
    assert err.startswith(f"footprint-audit reassess: unexpected argument '{paths[1]}' (options start with --): a glob "
                          "the shell expanded gives many paths, so quote it (--input 'recordings/**')"), err
    assert not (tmp_path / "out").exists()
    # a value after one of Beam's options is Beam's (checked once Beam is imported)
    with pytest.raises(OptionsError, match="quote it"):
        check_beam_args([paths[1]])


def test_a_second_job_on_a_locked_output_is_refused_before_beam_is_imported(tmp_path):
    from footprint_audit.pipelines.output.ownership import OutputLock

    out = tmp_path / "out"
    out.mkdir()
    lock = OutputLock(str(out))
    lock.acquire()
    try:
        err, last = without_beam("reassess", "--input", str(tmp_path), "--output", str(out))
    finally:
        lock.release()
    assert last == "beam not imported 2"
    assert f"--output {out} is in use by process {os.getpid()}" in err
