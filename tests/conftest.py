"""Shared test helpers: the repository root, Beam's local runner pinned, table loading."""

from __future__ import annotations

import datetime
import glob
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def fn_api_runner():
    """Beam's batch local runner (DirectRunner would first try to fetch Prism)."""
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    return FnApiRunner()


def load_table(out: str | os.PathLike, table: str) -> list[dict]:
    """All rows of one output table, timestamps as epoch milliseconds."""
    files = sorted(glob.glob(os.path.join(str(out), table, "**", "*.parquet"), recursive=True))
    if not files:
        return []
    rows = pa.concat_tables([pq.read_table(f) for f in files]).to_pylist()
    for r in rows:
        for k, v in r.items():
            if isinstance(v, datetime.datetime):
                r[k] = int(v.timestamp() * 1000)
    return rows


@pytest.fixture
def in_repo(monkeypatch):
    """Run from the repository root, so relative globs name files as the examples expect."""
    monkeypatch.chdir(ROOT)
    return ROOT
