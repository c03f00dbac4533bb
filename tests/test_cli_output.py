"""The output folder: ownership, the lock, checks before the run, failures mid-run, Ctrl-C and SIGTERM.

Each case runs `footprint-audit reassess` through the real CLI in its own
temporary folder and checks the exit code, the one sentence on stderr (no
traceback), that files the tool did not write are untouched, that the
previous tables stay whole and that no staging is left behind. The read-only
and full-disk cases mount a small tmpfs (the tests run as root; root ignores
permission bits, so `chmod` would prove nothing); they are skipped, saying
why, where mounting is not permitted.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from helpers import ROOT, assert_accounted, load_table, one_sentence, reassess_cli, tree_bytes
from footprint_audit.pipelines.output import ownership
from footprint_audit.pipelines.output.publish import STAGING
from footprint_audit.schemas.manifest import MANIFEST_TABLE
from test_cli_inputs import run_file
from test_kill_restart import make_input

TABLES = ("readings", "dead_letters", "runs")


def tables_of(out: Path) -> dict[str, bytes]:
    return {k: v for k, v in tree_bytes(out).items() if k.split("/", 1)[0] in TABLES}


def finished(out: Path) -> None:
    """A finished output folder: the tables, the marker, no staging and no lock left."""
    assert sorted(os.listdir(out)) == sorted([*TABLES, MANIFEST_TABLE, ownership.MARKER]), os.listdir(out)


@pytest.fixture
def small_input(tmp_path) -> Path:
    run_file(tmp_path / "in" / "run.jsonl", "r-small")
    return tmp_path / "in"


def _mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"a tmpfs cannot be mounted here ({res.stderr.strip() or 'mount failed'}): needs root and mount rights")


@pytest.fixture
def tmpfs(tmp_path):
    """Mount small tmpfs folders (`mount(where, size)`); unmounted after the test."""
    mounted: list[Path] = []

    def mount(where: Path, size: str) -> Path:
        _mount_tmpfs(where, size)
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_an_empty_output_is_a_usage_error(small_input):
    said = one_sentence(reassess_cli("--input", str(small_input), "--output", "", "--no-progress"), 2)
    assert "--output is empty" in said


@pytest.mark.parametrize("suffix", ["", "/", "/sub"])
def test_an_output_that_is_a_file_is_one_usage_sentence_however_written(tmp_path, small_input, suffix):
    (tmp_path / "afile").write_text("mine")
    said = one_sentence(
        reassess_cli("--input", str(small_input), "--output", f"{tmp_path / 'afile'}{suffix}", "--no-progress"), 2)
    assert "is a file, not a folder: give a folder's path" in said
    assert (tmp_path / "afile").read_text() == "mine"


def test_an_output_on_a_read_only_mount_is_refused_before_anything_is_read(tmp_path, small_input, tmpfs):
    ro = tmpfs(tmp_path / "ro", "1m")
    (ro / "keep.txt").write_text("mine")
    subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
    for out in (ro / "new-out", ro):
        said = one_sentence(reassess_cli("--input", str(small_input), "--output", str(out), "--no-progress"), 1)
        assert "Read-only file system" in said, said
    assert sorted(os.listdir(ro)) == ["keep.txt"]


def test_a_file_named_staging_in_the_output_is_refused_and_kept(tmp_path, small_input):
    out = tmp_path / "out"
    out.mkdir()
    (out / STAGING).write_text("the user's notes")
    said = one_sentence(reassess_cli("--input", str(small_input), "--output", str(out), "--no-progress"), 2)
    assert f"holds a file named {STAGING}" in said
    assert (out / STAGING).read_text() == "the user's notes"
    assert sorted(os.listdir(out)) == [STAGING]


@pytest.mark.parametrize("table", [*TABLES, MANIFEST_TABLE])
def test_tables_this_tool_did_not_write_are_refused_never_deleted(tmp_path, small_input, table):
    out = tmp_path / "out"
    (out / table).mkdir(parents=True)
    (out / table / "mine.parquet").write_bytes(b"the user's own file")
    (out / "notes.txt").write_text("also mine")
    before = tree_bytes(out)
    said = one_sentence(reassess_cli("--input", str(small_input), "--output", str(out), "--no-progress"), 2)
    assert f"already holds {table}/ that footprint-audit did not write" in said
    assert tree_bytes(out) == before
    assert sorted(os.listdir(out)) == sorted([table, "notes.txt"])


def test_a_streams_output_is_refused_as_a_streams_never_touched(tmp_path):
    out = tmp_path / "out"
    stream = subprocess.run([sys.executable, "-m", "footprint_audit.pipelines.cli", "stream", "--source",
                             f"file://{ROOT}/examples/recordings/stream/**", "--output", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert stream.returncode == 0, stream.stderr
    before = tree_bytes(out)
    said = one_sentence(reassess_cli("--input", str(ROOT / "examples" / "recordings"), "--output", str(out)), 2)
    assert said == (f"footprint-audit reassess: --output {out} holds a stream's tables (readings/window=…/): "
                    "`stream` and `compact` write them; give `reassess` another --output")
    assert tree_bytes(out) == before


def test_the_marker_says_this_tool_wrote_the_tables_and_a_rerun_replaces_only_them(tmp_path, small_input):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    res = reassess_cli("--input", str(small_input), "--output", str(out), "--no-progress", "--quiet")
    assert res.returncode == 0, res.stderr
    assert json.loads((out / ownership.MARKER).read_text())["written_by"] == "footprint-audit"
    first = tables_of(out)
    res = reassess_cli("--input", str(small_input), "--output", str(out), "--no-progress", "--quiet")
    assert res.returncode == 0, res.stderr
    assert tables_of(out) == first
    assert (out / "notes.txt").read_text() == "mine"
    assert sorted(os.listdir(out)) == sorted([*TABLES, MANIFEST_TABLE, ownership.MARKER, "notes.txt"])


def test_a_full_disk_mid_run_is_one_sentence_and_leaves_the_previous_tables_and_no_staging(tmp_path, small_input, tmpfs):
    disk = tmpfs(tmp_path / "disk", "600k")
    out = disk / "out"
    res = reassess_cli("--input", str(small_input), "--output", str(out), "--no-progress", "--quiet")
    assert res.returncode == 0, res.stderr
    previous = tree_bytes(out)
    big = tmp_path / "big"
    big.mkdir()
    with open(big / "noise.jsonl", "w") as f:  # dead letters whose raw bytes do not compress: > 600 KB of Parquet
        for _ in range(400):
            f.write("{broken " + os.urandom(2400).hex() + "\n")
    said = one_sentence(reassess_cli("--input", str(big), "--output", str(out), "--no-progress"), 1)
    assert "No space left on device" in said and "nothing was published" in said
    assert tree_bytes(out) == previous
    finished(out)
    # The disk is free again: the next job runs.
    res = reassess_cli("--input", str(small_input), "--output", str(out), "--no-progress", "--quiet")
    assert res.returncode == 0, res.stderr


def test_a_remote_output_that_cannot_be_written_is_refused_before_the_pipeline_runs(small_input):
    started = time.monotonic()
    res = reassess_cli("--input", str(small_input), "--output", "gs://footprint-audit-no-such-bucket/out")
    said = one_sentence(res, 1)
    assert said.startswith("footprint-audit reassess: --output gs://footprint-audit-no-such-bucket/out cannot be")
    assert "input files" not in res.stderr  # refused before the job started
    assert time.monotonic() - started < 120


def _job(inp: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "footprint_audit.pipelines.cli", "reassess", "--input", str(inp), "--output", str(out),
         "--no-progress", "--quiet", *extra],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )


def _wait_for(condition, p: subprocess.Popen, timeout: float = 300) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if p.poll() is not None:
            return False
        time.sleep(0.01)
    return False


@pytest.fixture(scope="module")
def big_input(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("big")
    make_input(base / "in", files=24, runs_per_file=40, calls_per_run=12)
    return base / "in"


SECOND_JOB = """
import logging, sys
logging.getLogger().addHandler(logging.NullHandler())  # as the CLI does before it imports Beam
from footprint_audit.pipelines import cli, reassess  # noqa: F401 - imported before the race
print("ready", flush=True)
sys.stdin.readline()
sys.exit(cli.main(["reassess", "--input", sys.argv[1], "--output", sys.argv[2], "--no-progress", "--quiet"]))
"""


def test_a_second_job_on_the_same_output_refuses_at_once_and_the_first_publishes_whole_tables(tmp_path, big_input):
    clean = tmp_path / "clean"
    res = reassess_cli("--input", str(big_input), "--output", str(clean), "--no-progress", "--quiet")
    assert res.returncode == 0, res.stderr
    out = tmp_path / "out"
    # The second job is the real CLI's `main`, its modules imported before the first job starts, so that
    # it asks for the output while the first one runs however fast this machine is.
    second = subprocess.Popen(
        [sys.executable, "-c", SECOND_JOB, str(big_input), str(out)],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert second.stdout.readline().strip() == "ready"
    first = _job(big_input, out)
    try:
        staged = lambda: (out / ownership.LOCK).is_file() and any((out / STAGING).glob("*/" + ownership.OWNER))  # noqa: E731
        assert _wait_for(staged, first), "the first job never started staging"
        _, second_err = second.communicate("go\n", timeout=300)
        assert first.poll() is None, "the first job ended before the second asked: the test proves nothing"
        said = one_sentence(subprocess.CompletedProcess(second.args, second.returncode, "", second_err), 2)
        assert f"--output {out} is in use by process {first.pid} on {socket.gethostname()}" in said
        _, err = first.communicate(timeout=600)
    finally:
        for p in (first, second):
            if p.poll() is None:
                p.kill()
                p.wait()
    assert first.returncode == 0, err[-3000:]
    assert tables_of(out) == tables_of(clean)  # the second job neither replaced nor emptied the first's tables
    finished(out)
    assert_accounted(out, sorted(str(p) for p in big_input.iterdir()))


def test_a_stale_lock_is_taken_over_and_only_dead_owners_staging_is_removed(tmp_path, small_input):
    out = tmp_path / "out"
    res = reassess_cli("--input", str(small_input), "--output", str(out), "--no-progress", "--quiet")
    assert res.returncode == 0, res.stderr
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = {"pid": int(gone.stdout), "host": socket.gethostname()}  # a process that has ended
    (out / ownership.LOCK).write_text(json.dumps(dead))
    for name, note in (("dead-job", dead), ("live-job", ownership.owner_note())):  # the test process is alive
        (out / STAGING / name / "readings").mkdir(parents=True)
        (out / STAGING / name / ownership.OWNER).write_text(json.dumps(note))
    res = reassess_cli("--input", str(small_input), "--output", str(out), "--no-progress", "--quiet")
    assert res.returncode == 0, res.stderr
    assert sorted(os.listdir(out / STAGING)) == ["live-job"]
    assert not (out / ownership.LOCK).exists()


def test_ctrl_c_stops_the_job_at_once_with_one_line_and_publishes_nothing(tmp_path, big_input, small_input):
    out = tmp_path / "out"
    res = reassess_cli("--input", str(small_input), "--output", str(out), "--no-progress", "--quiet")
    assert res.returncode == 0, res.stderr
    previous = tree_bytes(out)
    p = _job(big_input, out)
    try:
        assert _wait_for(lambda: any((out / STAGING).glob("*/" + ownership.OWNER)), p), "the job never started"
        os.killpg(p.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends: the whole foreground group
        sent = time.monotonic()
        _, err = p.communicate(timeout=120)
        took = time.monotonic() - sent
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130, err[-3000:]
    assert err.strip() == "footprint-audit reassess: interrupted; nothing was published"
    assert took < 60, f"the job took {took:.1f} s to stop"
    assert tree_bytes(out) == previous
    finished(out)
    assert load_table(out, "runs")[0]["run_id"] == "r-small"


@pytest.mark.parametrize("made", [True, False], ids=["folders-it-made", "a-folder-there-before"])
def test_ctrl_c_mid_job_removes_only_the_folders_it_made_for_the_output(tmp_path, big_input, made):
    out = tmp_path / "new" / "out" if made else tmp_path / "there"
    if not made:
        out.mkdir()
    p = _job(big_input, out)
    try:
        assert _wait_for(lambda: any((out / STAGING).glob("*/" + ownership.OWNER)), p), "the job never started"
        os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130, err[-3000:]
    assert sorted(os.listdir(tmp_path)) == ([] if made else ["there"]) and (made or os.listdir(out) == [])


def _beam_loading(p: subprocess.Popen) -> bool:
    """True once the process has loaded Arrow's library: Beam's imports are under way (Linux's /proc)."""
    try:
        return "libarrow" in Path(f"/proc/{p.pid}/maps").read_text()
    except OSError:
        return False


def _session_gone(sid: int) -> bool:
    """True when no process of the session `sid` is left (the launcher and its workers)."""
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == sid and proc.status() != psutil.STATUS_ZOMBIE:
                return False
        except (OSError, psutil.Error):
            continue
    return True


@pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="needs Linux's /proc to see Beam's imports begin")
@pytest.mark.parametrize("moment", ["imports", "lock"])
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)],
                         ids=["ctrl-c", "sigterm", "sighup"])
def test_ctrl_c_or_sigterm_as_the_job_starts_is_one_line_and_leaves_nothing(tmp_path, big_input, moment, signum, code):
    # While Beam is imported (the first second or two), or as the output is locked and staged,
    # before the job's own handler is set: the same line and exit code as later, and no lock or
    # staging left behind.
    out = tmp_path / "out"
    p = _job(big_input, out)
    started = (lambda: _beam_loading(p)) if moment == "imports" else (out / ownership.LOCK).exists
    try:
        assert _wait_for(started, p), f"the job ended before the {moment} began"
        os.kill(p.pid, signum)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == code, err[-3000:]
    assert err.strip() == "footprint-audit reassess: interrupted; nothing was published"
    assert not out.exists()  # the folder it made is removed with nothing published


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)], ids=["sigterm", "sighup"])
def test_sigterm_mid_job_cleans_up_like_ctrl_c_and_the_next_job_runs(tmp_path, big_input, small_input, signum, code):
    out = tmp_path / "out"
    res = reassess_cli("--input", str(small_input), "--output", str(out), "--no-progress", "--quiet")
    assert res.returncode == 0, res.stderr
    previous = tree_bytes(out)
    p = _job(big_input, out, "--workers", "2")
    try:
        assert _wait_for(lambda: any((out / STAGING).glob("*/" + ownership.OWNER)), p), "the job never started"
        os.kill(p.pid, signum)  # `kill PID`, or its terminal closed: the launcher alone
        _, err = p.communicate(timeout=120)
        deadline = time.monotonic() + 120
        while not _session_gone(p.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _session_gone(p.pid), "a worker of the stopped job is still running"
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == code, err[-3000:]
    assert err.strip() == "footprint-audit reassess: interrupted; nothing was published"
    assert tree_bytes(out) == previous  # no lock, no staging, the previous tables whole
    finished(out)
    res = reassess_cli("--input", str(small_input), "--output", str(out), "--no-progress", "--quiet")
    assert res.returncode == 0, res.stderr


def test_a_summary_json_that_cannot_be_written_is_refused_before_the_job_runs(tmp_path, small_input):
    out = tmp_path / "out"
    res = reassess_cli("--input", str(small_input), "--output", str(out), "--no-progress", "--quiet")
    assert res.returncode == 0, res.stderr
    previous = tree_bytes(out)
    (tmp_path / "a-folder").mkdir()
    for summary in (tmp_path / "no-such-folder" / "summary.json", tmp_path / "a-folder"):
        res = reassess_cli("--input", str(small_input), "--output", str(out), "--summary-json", str(summary))
        said = one_sentence(res, 2)
        assert said.startswith(f"footprint-audit reassess: --summary-json {summary} cannot be written ("), said
        assert tree_bytes(out) == previous
    assert sorted(os.listdir(tmp_path / "a-folder")) == []


def test_a_summary_json_in_a_folder_the_publish_replaces_is_refused(tmp_path, small_input):
    out = tmp_path / "out"
    assert reassess_cli("--input", str(small_input), "--output", str(out), "--no-progress", "--quiet").returncode == 0
    previous = tree_bytes(out)
    for folder in ("readings", "manifest", "_staging"):
        summary = out / folder / "s.json"
        said = one_sentence(reassess_cli("--input", str(small_input), "--output", str(out), "--summary-json", str(summary)), 2)
        assert said == (f"footprint-audit reassess: --summary-json {summary} is in --output's {folder}/, "
                        "which the job replaces: give a path outside it")
        assert tree_bytes(out) == previous


def test_a_summary_json_that_fails_as_it_is_written_fails_the_job_and_publishes_nothing(tmp_path, big_input, small_input, tmpfs):
    # Exit 1 says the previous tables are kept: the summary's JSON is written before the tables are published.
    out = tmp_path / "out"
    res = reassess_cli("--input", str(small_input), "--output", str(out), "--no-progress", "--quiet")
    assert res.returncode == 0, res.stderr
    previous = tree_bytes(out)
    disk = tmpfs(tmp_path / "disk", "64k")
    summary = disk / "summary.json"
    summary.write_text('{"the": "previous summary"}\n')
    p = _job(big_input, out, "--summary-json", str(summary))
    try:
        assert _wait_for(lambda: any((out / STAGING).glob("*/" + ownership.OWNER)), p), "the job never started"
        with open(disk / "filler", "wb", buffering=0) as f:  # the disk fills up while the job runs
            try:
                while f.write(b"\0" * 4096):
                    pass
            except OSError:
                pass
        _, err = p.communicate(timeout=600)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    said = one_sentence(subprocess.CompletedProcess(p.args, p.returncode, "", err), 1)
    assert "nothing was published" in said and "No space left on device" in said, said
    assert tree_bytes(out) == previous
    finished(out)
    assert summary.read_text() == '{"the": "previous summary"}\n'
    assert sorted(os.listdir(disk)) == ["filler", "summary.json"]
