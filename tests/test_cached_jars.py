"""The cached Flink job server is used only when it is there or asked for; without it, Beam's own behaviour."""

from __future__ import annotations

import os

import pytest
from apache_beam.runners.portability.flink_runner import FlinkRunner

from footprint_audit.pipelines.flink import cached_jars
from footprint_audit.pipelines.reassess import command as reassess
from tools import jars

ARGS = ["--input", "examples/recordings/**", "--declarations", "examples/declarations.json", "--no-progress", "--quiet"]


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """No cached jars and no `mvn` on PATH."""
    monkeypatch.setenv("FOOTPRINT_AUDIT_JARS", str(tmp_path / "jars"))
    monkeypatch.delenv(cached_jars.USE_ENV, raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    return tmp_path / "jars"


def _complete_cache(folder) -> str:
    beam = cached_jars.job_server_folder()
    assert beam == folder / jars.beam_spec()["name"]  # the product reads where the tool writes
    beam.mkdir(parents=True)
    (beam / ".complete").write_text("x\n")
    (beam / "job-server.jar").write_bytes(b"PK")
    return str(beam / "job-server.jar")


def test_a_missing_cache_without_mvn_leaves_the_arguments_to_beam(empty_cache):
    args = ["--runner=FlinkRunner", "--flink_master=localhost:8081"]
    assert cached_jars.cached_job_server(args) == args


def test_reassess_on_flink_without_cache_or_mvn_runs_beams_flink_runner_unchanged(empty_cache, tmp_path, monkeypatch,
                                                                                   in_repo, capsys):
    seen = {}

    def beams_own(self, pipeline, options):
        seen.update(options.get_all_options())
        raise RuntimeError("Beam could not fetch its job server jar\n(more lines)")

    monkeypatch.setattr(FlinkRunner, "run_pipeline", beams_own)
    code = reassess.run([*ARGS, "--output", str(tmp_path / "o"), "--runner=FlinkRunner", "--flink_master=localhost:1"])
    err = capsys.readouterr().err
    assert code == 1, err  # Beam's failure, told in one sentence; not exit 2 for a missing `mvn`
    assert seen and not seen.get("flink_job_server_jar")
    assert "mvn" not in err and "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        "footprint-audit reassess: the job failed on FlinkRunner and nothing was published: "
        "Beam could not fetch its job server jar")


def test_a_cached_job_server_is_filled_in_unless_one_is_given_or_beams_is_asked_for(empty_cache, monkeypatch):
    jar = _complete_cache(empty_cache)
    assert cached_jars.cached_job_server(["--runner=FlinkRunner"]) == ["--runner=FlinkRunner", f"--flink_job_server_jar={jar}"]
    given = ["--runner=FlinkRunner", "--flink_job_server_jar=mine.jar"]
    assert cached_jars.cached_job_server(given) == given
    assert cached_jars.cached_job_server(["--runner=DataflowRunner"]) == ["--runner=DataflowRunner"]
    monkeypatch.setenv(cached_jars.USE_ENV, "beam")
    assert cached_jars.cached_job_server(["--runner=FlinkRunner"]) == ["--runner=FlinkRunner"]


def test_asking_for_a_missing_cache_is_one_sentence_naming_the_tool_and_exit_2(empty_cache, tmp_path, monkeypatch, in_repo,
                                                                              capsys):
    monkeypatch.setenv(cached_jars.USE_ENV, "cached")
    code = reassess.run([*ARGS, "--output", str(tmp_path / "o"), "--runner=FlinkRunner"])
    err = capsys.readouterr().err
    assert code == 2 and "tools/fetch_jars.py" in err and "Traceback" not in err and err.count("\n") == 1
    assert not os.path.exists(empty_cache / jars.beam_spec()["name"] / "job-server.jar")
