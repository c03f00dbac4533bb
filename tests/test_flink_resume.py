"""`stream` on Flink resumes from the state dir's latest complete checkpoint: which one, with what
options, and a checkpoint of another job refused (no JVM: the session is set up with its own
`--job_endpoint`, so no job server is started; where one is, it is a stand-in)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from footprint_audit.pipelines.launch.errors import UsageError
from footprint_audit.pipelines.flink import FlinkSession, FlinkStartError, OwnJobServer, latest_checkpoint
from footprint_audit.pipelines.local_runner import JobRunner
from footprint_audit.pipelines.stream.args import parse


def _session(out: Path, beam_args: list[str], declarations_sha256: str | None = None, **kw) -> FlinkSession:
    """A session of the settings `stream` parses from these arguments, with `kw` changed."""
    settings = parse(["--source", "kafka://127.0.0.1:9092/events", "--output", str(out), *beam_args])
    return FlinkSession(replace(settings, **kw), declarations_sha256)


def _checkpoint(root: Path, job: str, n: int, complete: bool = True, age: float = 0.0) -> Path:
    chk = root / "_state" / "checkpoints" / job / f"chk-{n}"
    chk.mkdir(parents=True)
    if complete:
        (chk / "_metadata").write_bytes(b"x")
        t = os.stat(chk / "_metadata").st_mtime - age
        os.utime(chk / "_metadata", (t, t))
    return chk


REMOTE = ["--runner=FlinkRunner", "--job_endpoint=localhost:1"]


def test_the_newest_complete_checkpoint_is_chosen(tmp_path):
    old = _checkpoint(tmp_path, "a" * 32, 7, age=100)
    newest = _checkpoint(tmp_path, "b" * 32, 2)
    _checkpoint(tmp_path, "b" * 32, 3, complete=False)  # being written when the job died
    assert latest_checkpoint(tmp_path / "_state" / "checkpoints") == newest
    assert old.exists()
    assert latest_checkpoint(tmp_path / "nothing") is None


def test_a_restart_restores_it_and_forgets_older_jobs(tmp_path):
    old = _checkpoint(tmp_path, "a" * 32, 7, age=100)
    newest = _checkpoint(tmp_path, "b" * 32, 2)
    with _session(tmp_path, list(REMOTE)) as session:
        assert session.restored == newest
        assert f"--savepoint_path={newest}" in session.beam_args
        assert "--allow_non_restored_state=true" in session.beam_args
        assert "--retain_externalized_checkpoints_on_cancellation=true" in session.beam_args
    assert newest.exists() and not old.parent.exists()


def test_no_resume_starts_without_it(tmp_path):
    _checkpoint(tmp_path, "b" * 32, 2)
    with _session(tmp_path, list(REMOTE), no_resume=True) as session:
        assert session.restored is None
        assert not any(a.startswith("--savepoint_path") for a in session.beam_args)
    assert latest_checkpoint(tmp_path / "_state" / "checkpoints") is None  # gone: never resumed later


def test_bundles_close_after_200_ms_unless_the_user_says_otherwise(tmp_path):
    with _session(tmp_path, list(REMOTE)) as session:
        assert "--max_bundle_time_mills=200" in session.beam_args
    given = list(REMOTE) + ["--max_bundle_time_mills=1000"]
    with _session(tmp_path / "b", given) as session:
        bundle = [a for a in session.beam_args if a.startswith("--max_bundle_time_mills")]
        assert bundle == ["--max_bundle_time_mills=1000"]


def test_a_checkpoint_holds_no_bundle_s_pending_output(tmp_path):
    """Beam's Flink runner files a fused stage's pending output under its output numbers, and a restarted job's
    stages need not be fused alike: a restore sent the run counts' pending output to the readings' writer.
    Bundles finish first."""
    with _session(tmp_path, list(REMOTE)) as session:
        assert "--finish_bundle_before_checkpointing=true" in session.beam_args


def test_a_checkpoint_of_another_source_is_refused_in_one_sentence(tmp_path):
    with _session(tmp_path, list(REMOTE)):
        pass  # notes this job's source and settings
    _checkpoint(tmp_path, "b" * 32, 2)
    with pytest.raises(UsageError) as refused:
        with _session(tmp_path, list(REMOTE), source="kafka://127.0.0.1:9092/other"):
            pass
    assert "--source kafka://127.0.0.1:9092/events" in str(refused.value) and "--no-resume" in str(refused.value)
    with _session(tmp_path, list(REMOTE), source="kafka://127.0.0.1:9092/other", no_resume=True) as s:
        assert s.restored is None


@pytest.mark.parametrize("changed, named", [
    ({"max_event_bytes": 2048}, "--max-event-bytes 1024"),
    ({"declarations_sha256": "cd" * 32}, "other --declarations (rowsAt of sha256 abababababab…; these: cdcdcdcdcdcd…)"),
    ({"declarations_sha256": None}, "other --declarations (rowsAt of sha256 abababababab…; these: none)"),
])
def test_a_checkpoint_made_with_other_declarations_or_event_cap_is_refused_in_one_sentence(tmp_path, changed, named):
    same = dict(max_event_bytes=1024, declarations_sha256="ab" * 32)
    with _session(tmp_path, list(REMOTE), **same):
        pass
    _checkpoint(tmp_path, "b" * 32, 2)
    with _session(tmp_path, list(REMOTE), **same) as s:  # the same ones: resumed
        assert s.restored is not None
    with pytest.raises(UsageError) as refused:
        with _session(tmp_path, list(REMOTE), **{**same, **changed}):
            pass
    said = str(refused.value)
    assert named in said and "--no-resume" in said and "--state-dir" in said and said.count(". ") == 0
    with _session(tmp_path, list(REMOTE), **{**same, **changed}, no_resume=True) as s:
        assert s.restored is None


def test_the_declarations_hash_is_of_their_rowsat_not_the_file_bytes(tmp_path):
    from footprint_audit.schemas.declarations import Declarations, load_declarations

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text('{"tools": {"x": {"rowsAt": "rows"}, "y": {"rowsAt": "hits"}}}')
    b.write_text('{\n  "id": "app", "version": "2",\n  "tools": {"y": {"rowsAt": "hits"}, "x": {"rowsAt": "rows"}}\n}\n')
    assert load_declarations(str(a)).sha256 == load_declarations(str(b)).sha256
    assert len(load_declarations(str(a)).sha256 or "") == 64
    b.write_text('{"tools": {"x": {"rowsAt": "items"}, "y": {"rowsAt": "hits"}}}')
    assert load_declarations(str(a)).sha256 != load_declarations(str(b)).sha256
    assert load_declarations(None).sha256 is None and Declarations().sha256 is None


def test_a_checkpoint_whose_join_state_has_another_layout_is_refused_in_one_sentence(tmp_path):
    import json

    from footprint_audit.transforms.stream.join import STATE_LAYOUT

    with _session(tmp_path, list(REMOTE)):
        pass
    note = tmp_path / "_state" / "job.json"
    assert json.loads(note.read_text())["join_state"] == STATE_LAYOUT
    _checkpoint(tmp_path, "b" * 32, 2)
    with _session(tmp_path, list(REMOTE)) as s:  # the same layout: resumed
        assert s.restored is not None
    # an earlier version's note (no layout: a record cell and an events bag) is refused
    theirs = json.loads(note.read_text())
    del theirs["join_state"]
    note.write_text(json.dumps(theirs))
    with pytest.raises(UsageError) as refused:
        with _session(tmp_path, list(REMOTE)):
            pass
    assert "another layout" in str(refused.value) and "--no-resume" in str(refused.value)
    with _session(tmp_path, list(REMOTE), no_resume=True) as s:
        assert s.restored is None


class FakeServer:
    """A job server that starts nothing: what it was started with is noted in `started`."""

    endpoint = "localhost:1"
    started: list[dict] = []

    def __init__(self, jar, master, log, conf_dir=None, heap_mb=None, c1_only=False):
        FakeServer.started.append(dict(jar=jar, master=master, log=log, conf_dir=conf_dir, heap_mb=heap_mb, c1_only=c1_only,
                                       stopped=False))

    def start(self):
        return self

    def stop(self):
        FakeServer.started[-1]["stopped"] = True


@pytest.fixture
def fake_server(monkeypatch):
    import footprint_audit.pipelines.flink.job_server as js

    FakeServer.started = []
    monkeypatch.setattr(js, "JobServer", FakeServer)
    return FakeServer.started


def test_the_embedded_cluster_gets_the_restore_point_through_its_configuration(tmp_path, fake_server):
    newest = _checkpoint(tmp_path, "b" * 32, 2)
    args = ["--runner=FlinkRunner", "--flink_master=[local]", "--flink_job_server_jar=/nowhere.jar"]
    with _session(tmp_path, args, job_server_heap_mb=1500) as session:
        assert session.restored == newest
        assert not any(a.startswith("--savepoint_path") for a in session.beam_args)  # Beam ignores it for [local]
        own = session.job_server
    conf = (own.conf_dir / "flink-conf.yaml").read_text()
    assert f"execution.savepoint.path: {newest.as_uri()}" in conf
    assert "execution.savepoint.ignore-unclaimed-state: true" in conf
    # the job server is the JobRunner's to start, with the session's log, configuration and heap, and to stop
    with JobRunner(session.beam_args, job_server=own) as runs:
        assert fake_server == [dict(jar="/nowhere.jar", master="[local]", log=tmp_path.resolve() / "_state" / "job-server.log",
                                    conf_dir=own.conf_dir, heap_mb=1500, c1_only=False, stopped=False)]
        assert "--job_endpoint=localhost:1" in runs.beam_args
        assert not any(a.startswith("--flink_job_server_jar") for a in runs.beam_args)
    assert fake_server[0]["stopped"]


def test_a_job_server_given_or_not_on_flink_is_not_started(tmp_path, fake_server):
    with _session(tmp_path, list(REMOTE)) as session:  # --job_endpoint given: nothing to start
        assert session.job_server is None
    with JobRunner(list(REMOTE), job_server=OwnJobServer(tmp_path / "log")) as runs:
        assert runs.beam_args == REMOTE
    with JobRunner([], job_server=OwnJobServer(tmp_path / "log")):  # the local runner
        pass
    assert fake_server == []


def test_a_flink_job_with_no_job_server_to_be_had_is_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setenv("FOOTPRINT_AUDIT_JARS", str(tmp_path / "no-cache"))
    monkeypatch.setenv("FOOTPRINT_AUDIT_FLINK_JARS", "cached")
    for own in (None, OwnJobServer(tmp_path / "log")):
        with pytest.raises(FlinkStartError) as refused:
            JobRunner(["--runner=FlinkRunner"], job_server=own)
        assert "not cached" in str(refused.value)


def test_the_embedded_cluster_cuts_state_into_as_many_key_groups_as_workers_and_an_older_checkpoint_is_refused(
        tmp_path):
    local = ["--runner=FlinkRunner", "--flink_master=[local]", "--flink_job_server_jar=/nowhere.jar", "--parallelism=2"]
    with _session(tmp_path, list(local)) as session:
        assert "--max_parallelism=2" in session.beam_args
    with _session(tmp_path, list(REMOTE)) as session:  # a cluster keeps Flink's default
        assert not any(a.startswith("--max_parallelism") for a in session.beam_args)
    # a checkpoint noted before the key groups were (so with Flink's 128) cannot be restored into 2
    _checkpoint(tmp_path, "c" * 32, 1)
    with pytest.raises(UsageError) as refused:
        with _session(tmp_path, list(local)):
            pass
    assert "--max_parallelism=128" in str(refused.value) and "--no-resume" in str(refused.value)


def test_the_job_server_heap_is_capped_by_default_and_settable(tmp_path):
    from footprint_audit.pipelines.flink.job_server import JobServer, default_heap_mb

    sized = JobServer("/x.jar", "[local]", tmp_path / "log").command()
    assert f"-Xmx{default_heap_mb()}m" in sized and "-XX:+ExitOnOutOfMemoryError" in sized
    assert 1024 <= default_heap_mb() <= 8192
    assert "-Xmx1500m" in JobServer("/x.jar", "[local]", tmp_path / "log", heap_mb=1500).command()
    assert "-XX:TieredStopAtLevel=1" not in sized
    assert "-XX:TieredStopAtLevel=1" in JobServer("/x.jar", "[local]", tmp_path / "log", c1_only=True).command()


def test_a_bounded_stream_s_job_server_compiles_with_c1_only(tmp_path, fake_server):
    """A bounded read ends before C2's compiling pays back (bench/README.md, "Where the stream's time goes")."""
    args = ["--runner=FlinkRunner", "--flink_master=[local]", "--flink_job_server_jar=/nowhere.jar"]
    for max_records, c1_only in ((0, False), (10, True)):
        with _session(tmp_path, args, max_records=max_records) as session, \
                JobRunner(session.beam_args, job_server=session.job_server):
            assert fake_server[-1]["c1_only"] is c1_only


class _Job:
    """A submitted job as the launcher sees it: its state moves on as the launcher polls it."""

    def __init__(self, states):
        self.states, self.cancelled = list(states), False

    @property
    def state(self):
        return self.states.pop(0) if len(self.states) > 1 else self.states[0]

    def cancel(self):
        self.cancelled = True
        self.states = ["CANCELLED"]

    def wait_until_finish(self):
        return self.states[0]


def test_a_job_that_checkpoints_without_reading_is_cancelled_a_slow_start_and_a_read_that_starts_are_not(tmp_path):
    from footprint_audit.pipelines.stream.command import NOT_STARTED, _wait

    marker, checkpoints = tmp_path / "_read-started", tmp_path / "_state" / "checkpoints"
    # slow: the job runs but has not checkpointed yet (Flink still deploying): never cancelled
    slow = _Job(["STARTING"] + ["RUNNING"] * 12 + ["DONE"])
    assert _wait(slow, None, str(marker), start_seconds=0.0, checkpoints=checkpoints) == "DONE" and not slow.cancelled
    # stuck: it checkpoints (so it is up) and its read has not started: cancelled
    _checkpoint(tmp_path, "d" * 32, 1, age=-5)  # completed after the submission
    stuck = _Job(["STARTING", "RUNNING"])
    assert _wait(stuck, None, str(marker), start_seconds=1.0, checkpoints=checkpoints) == NOT_STARTED and stuck.cancelled
    marker.touch()
    done = _Job(["RUNNING", "RUNNING", "DONE"])
    assert _wait(done, None, str(marker), start_seconds=1.0, checkpoints=checkpoints) == "DONE" and not done.cancelled
