"""`footprint-audit reassess` on an embedded Flink gives the same tables as on Beam's local runner."""

from __future__ import annotations

import pytest

from helpers import ROOT, load_table
from footprint_audit.pipelines import reassess

pytestmark = pytest.mark.integration

ARGS = ["--input", "examples/recordings/**", "--declarations", "examples/declarations.json", "--no-progress", "--quiet"]


def test_reassess_on_flink_equals_the_local_runner(flink_args, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    local, flink = tmp_path / "local", tmp_path / "flink"
    assert reassess.run([*ARGS, "--output", str(local)]) == 0
    assert reassess.run([*ARGS, "--output", str(flink), *flink_args(streaming=False)]) == 0
    for table in ("readings", "dead_letters", "runs"):
        assert load_table(flink, table) == load_table(local, table), table
        assert sorted(p.name for p in (flink / table).glob("*.parquet")) == sorted(p.name for p in (local / table).glob("*.parquet"))
