"""`footprint-audit reassess` on an embedded Flink gives the same tables as on Beam's local runner."""

from __future__ import annotations

import pytest

from helpers import ROOT, load_table
from footprint_audit.pipelines.reassess import command as reassess

pytestmark = pytest.mark.integration

ARGS = ["--input", "examples/recordings/**", "--declarations", "examples/declarations.json", "--no-progress", "--quiet"]


def test_reassess_on_flink_equals_the_local_runner(flink_args, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    local, flink = tmp_path / "local", tmp_path / "flink"
    assert reassess.run([*ARGS, "--output", str(local)]) == 0
    assert reassess.run([*ARGS, "--output", str(flink), *flink_args(streaming=False)]) == 0
    for table in ("readings", "dead_letters", "runs"):
        assert load_table(flink, table) == load_table(local, table), table
        assert (sorted(p.name for p in (flink / table).glob("*.parquet"))
                == sorted(p.name for p in (local / table).glob("*.parquet")))


def test_reassess_on_flink_as_a_user_runs_it_prints_only_its_own_lines(flink_args, tmp_path):
    """The command in its own process, two workers: no Beam log line, no worker thread's traceback when
    the job ends and its runner hangs up ("Multiplexer hanging up")."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("FOOTPRINT_AUDIT_LOG", "FOOTPRINT_AUDIT_WORKERS")}
    res = subprocess.run([sys.executable, "-m", "footprint_audit.pipelines.cli", "reassess", *ARGS,
                          "--output", str(tmp_path / "o"), *flink_args(streaming=False, parallelism=2)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0 and res.stderr == "", res.stderr[-3000:]
    assert (tmp_path / "o" / "readings").is_dir()
