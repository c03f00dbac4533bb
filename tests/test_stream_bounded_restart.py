"""A bounded Kafka read killed after it had read every record it was bounded to, before it wrote them all:
the same command resumes from the checkpoint the killed job left (its state holds what it had not written),
and says "nothing to do" only once no checkpoint is left (a read that ended forgets its checkpoints).

Seen in CI: `test_sigkill_during_a_backlog_then_restart_counts_every_record_once` lost the readings of
calls whose records the killed job had read and committed but not yet written, when the kill came late.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from footprint_audit.pipelines.stream import args as stream_args
from footprint_audit.pipelines.stream import command as stream_mod


@pytest.fixture
def bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """A group that has read the 20 records the command is bounded to; the job's submissions are noted."""
    submitted: list[str] = []
    monkeypatch.setattr(stream_mod, "check_topic", lambda brokers, topic: None)
    monkeypatch.setattr(stream_mod, "records_read", lambda spec: 20)
    monkeypatch.setattr(stream_mod, "_submit", lambda settings, *rest: submitted.append(settings.output) or "ENDED")
    out = tmp_path / "out"
    argv = ["--source", "kafka://127.0.0.1:9/events", "--output", str(out), "--max-records", "20",
            "--compact-seconds", "0", "--runner", "FlinkRunner"]
    return {"out": out, "argv": argv, "submitted": submitted}


def _launch(argv: list[str]) -> int:
    return stream_mod.launch(stream_args.parse(argv))


def test_a_read_that_ended_has_nothing_to_do(bounded, capsys):
    assert _launch(bounded["argv"]) == 0
    assert bounded["submitted"] == [] and "nothing to do" in capsys.readouterr().out


def test_a_checkpoint_left_by_a_killed_job_is_resumed_though_the_group_has_read_the_bound(bounded, capsys):
    metadata = bounded["out"] / "_state" / "checkpoints" / "a1b2" / "chk-7" / "_metadata"
    metadata.parent.mkdir(parents=True)
    metadata.write_bytes(b"checkpoint")
    assert _launch(bounded["argv"]) == 0
    assert bounded["submitted"] == [str(bounded["out"])] and "nothing to do" not in capsys.readouterr().out
    # --no-resume starts over from the group's offsets: then the bound is read already
    bounded["submitted"].clear()
    assert _launch([*bounded["argv"], "--no-resume"]) == 0
    assert bounded["submitted"] == []
