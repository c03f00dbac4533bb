"""`reassess --workers N`: N worker processes give the same bytes as one, quietly, and leave no process behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from helpers import ROOT, generated_history
from footprint_audit.pipelines.local_runner import plans
from footprint_audit.pipelines.reassess import command as reassess
from footprint_audit.pipelines.local_runner import workers

DECL = "examples/declarations.json"
TABLES = ("readings", "dead_letters", "runs")


@pytest.fixture(scope="module")
def mixed_input(tmp_path_factory) -> str:
    """The examples plus generated recordings and JSON Lines / SSE streams (several files of each)."""
    root = tmp_path_factory.mktemp("mixed")
    generated_history(root / "recordings", 1_500_000, seed=3, layout="recordings", big=False).unlink()
    generated_history(root / "stream", 1_500_000, seed=4, layout="stream", big=False).unlink()
    return str(root)


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for t in TABLES for p in sorted((out / t).glob("*.parquet"))}


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop(workers.WORKERS_ENV, None)
    return subprocess.run([sys.executable, "-m", "footprint_audit.pipelines.cli", "reassess", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def test_two_forked_workers_write_the_same_bytes_as_one(mixed_input, tmp_path):
    outs = {}
    for n in (1, 2):
        out = tmp_path / f"w{n}"
        res = _cli("--input", "examples/recordings/**", "--input", mixed_input, "--output", str(out),
                   "--declarations", DECL, "--shards", "2", "--workers", str(n), "--quiet")
        assert res.returncode == 0, res.stderr
        # Beam's noise stays out of the terminal: no import warning, no worker INFO lines.
        assert "apitools" not in res.stderr and "INFO" not in res.stderr and "WARNING" not in res.stderr, res.stderr
        outs[n] = _files(out)
    assert len(outs[1]) == 2 + 1 + 1 and outs[2] == outs[1]


# A job whose every call fails to be read, run by the command as a user runs it (the patch is
# made before the pool is forked, so both workers carry it).
FAILING_JOB = """
import sys
from footprint_audit.pipelines.launch import install
install()  # as the command does first thing, before this script's import of Beam below
from footprint_audit.transforms.read import apply_readers

def broken(*args, **kwargs):
    raise RuntimeError("a reader broke")

apply_readers.reading_values = broken
from footprint_audit.pipelines import cli
sys.exit(cli.main(["reassess", *sys.argv[1:]]))
"""


def test_a_failed_job_on_two_workers_is_one_sentence_without_the_workers_tracebacks(tmp_path):
    env = dict(os.environ)
    env.pop(workers.WORKERS_ENV, None)
    res = subprocess.run([sys.executable, "-c", FAILING_JOB, "--input", "examples/recordings/**", "--declarations", DECL,
                          "--output", str(tmp_path / "o"), "--workers", "2", "--no-progress"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 1
    assert res.stderr.splitlines() == ["footprint-audit reassess: the job failed and nothing was published: "
                                       "RuntimeError: a reader broke [while running 'ApplyReaders/ReadEachCall']"], res.stderr
    assert not (tmp_path / "o" / "readings").exists()


def test_workers_started_as_new_interpreters_write_the_same_bytes(mixed_input, tmp_path, monkeypatch, in_repo):
    """The pool's other way (a launcher that already runs threads, such as this test session)."""
    monkeypatch.setattr(workers, "can_fork", lambda: False)
    args = ["--input", mixed_input, "--declarations", DECL, "--no-progress", "--quiet"]
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    assert reassess.run([*args, "--output", str(tmp_path / "w1"), "--workers", "1"]) == 0
    assert reassess.run([*args, "--output", str(tmp_path / "w2"), "--workers", "2"]) == 0
    assert _files(tmp_path / "w2") == _files(tmp_path / "w1")
    left = {p.pid for p in psutil.Process().children(recursive=True)} - before
    assert not left, "the pool's workers were not stopped"


def test_a_pool_closed_before_the_runner_asks_ends_its_workers():
    pool = workers.WorkerPool(2)
    pids = [w.pid for w in pool._all]
    assert pool.address.startswith("127.0.0.1:")
    pool.close(timeout=30)
    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


def test_a_child_whose_parent_died_before_it_asked_to_die_with_it_ends_there():
    """A launcher killed between a fork and its child's `die_with_parent` is never reported to the child by
    Linux: the child (a worker, the manifest's hashing, holding the launcher's files and its output's lock)
    would outlive it. Here the parent is gone first, on purpose."""
    read_fd, write_fd = os.pipe()
    middle = os.fork()
    if middle == 0:  # the parent: forks the child and ends at once
        try:
            os.close(read_fd)
            parent = os.getpid()
            if os.fork() == 0:  # the child: asks once its parent is gone (handed to another process)
                try:
                    deadline = time.monotonic() + 60
                    while os.getppid() == parent and time.monotonic() < deadline:
                        time.sleep(0.001)
                    workers.die_with_parent(parent)
                finally:
                    os.write(write_fd, b"outlived its parent")
                    os._exit(0)
        finally:
            os._exit(0)
    os.close(write_fd)
    os.waitpid(middle, 0)
    with os.fdopen(read_fd, "rb") as f:
        said = f.read()  # end of file once the child has ended, killed or not
    assert said == b""


def test_the_worker_count_comes_from_the_flag_then_beams_then_the_default(monkeypatch):
    monkeypatch.setenv(workers.WORKERS_ENV, "3")
    assert plans.worker_count(2, ["--direct_num_workers=4"]) == 2
    assert plans.worker_count(None, ["--direct_num_workers=4"]) == 4
    assert plans.worker_count(None, []) == 3
    monkeypatch.delenv(workers.WORKERS_ENV)
    assert plans.worker_count(None, []) == workers.cores()


def test_several_local_workers_run_in_the_pool_and_get_the_files_spread():
    from apache_beam.options.pipeline_options import DirectOptions
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    options, runner = plans.runner_options([], 2, "127.0.0.1:1234")
    assert isinstance(runner, FnApiRunner)
    assert options.view_as(DirectOptions).direct_num_workers == 2


def test_on_flink_workers_set_the_parallelism_unless_given():
    options, runner = plans.runner_options(["--runner=FlinkRunner"], 2)
    assert runner is None
    assert options.get_all_options()["parallelism"] == 2
    assert int(options.get_all_options()["sdk_worker_parallelism"]) == 2
    options, _ = plans.runner_options(["--runner=FlinkRunner", "--parallelism=1"], 2)
    assert options.get_all_options()["parallelism"] == 1


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_a_bad_worker_count_is_a_usage_mistake(tmp_path, value):
    res = _cli("--input", "examples/recordings/**", "--output", str(tmp_path / "o"), "--workers", value)
    assert res.returncode == 2 and "Traceback" not in res.stderr and "--workers" in res.stderr
