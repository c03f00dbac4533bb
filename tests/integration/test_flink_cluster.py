"""`reassess` on a Flink cluster of separate processes (tools/flink_cluster.py) gives the local runner's tables.

The fixture starts a JobManager and a TaskManager (two slots) in their own JVMs and
Beam's Python worker pool, runs the job with parallelism 2 on them, and stops them all
afterwards (the test asserts that no process of theirs is left).
"""

from __future__ import annotations

import importlib.util

import psutil
import pytest

from helpers import ROOT, load_table
from footprint_audit.pipelines.reassess import command as reassess

pytestmark = pytest.mark.integration

ARGS = ["--input", "examples/recordings/**", "--declarations", "examples/declarations.json", "--no-progress", "--quiet"]
TABLES = ("readings", "dead_letters", "runs")


def _cluster_module():
    spec = importlib.util.spec_from_file_location("flink_cluster", ROOT / "tools" / "flink_cluster.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def flink_cluster(integration_jars, flink_args, tmp_path, monkeypatch):
    """A started cluster (its info dict: ports, pids, Beam flags); stopped afterwards, processes checked gone.

    `flink_args` (conftest) stops the job servers FlinkRunner starts in this test.
    """
    monkeypatch.chdir(ROOT)  # the pool's workers run where the cluster is started: relative paths agree
    cluster = _cluster_module()
    state = tmp_path / "flink-cluster"
    info = cluster.start(state, slots=2, timeout=600)
    pids = [p["pid"] for p in info["processes"]]
    pool_children = [c.pid for c in psutil.Process(pids[-1]).children(recursive=True)] if psutil.pid_exists(pids[-1]) else []
    try:
        yield info
    finally:
        cluster.stop(state, grace=60)
        left = [p for p in pids + pool_children if psutil.pid_exists(p)
                and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        assert not left, f"cluster processes left running: {left}"
        assert (state / "log" / "jobmanager.log").exists() and (state / "log" / "worker-pool.log").exists()


def test_reassess_on_a_flink_cluster_equals_the_local_runner(flink_cluster, tmp_path):
    local, cluster = tmp_path / "local", tmp_path / "cluster"
    assert reassess.run([*ARGS, "--output", str(local), "--workers", "1"]) == 0
    flags = [*flink_cluster["flags"], "--workers", "2", f"--temp_location={tmp_path / 'beam-temp'}"]
    assert reassess.run([*ARGS, "--output", str(cluster), *flags]) == 0
    for table in TABLES:
        assert load_table(cluster, table) == load_table(local, table), table
        names = sorted(p.name for p in (local / table).glob("*.parquet"))
        assert names and sorted(p.name for p in (cluster / table).glob("*.parquet")) == names
        for name in names:
            assert (cluster / table / name).read_bytes() == (local / table / name).read_bytes(), (table, name)

