"""A job killed with SIGKILL, and started again on the same output folder, leaves what a clean run leaves.

- The real CLI on a larger generated input, killed at several moments (reading,
  joining, writing the staged tables): the output folder still holds the
  previous run's tables, whole and unmixed (a kill that lands as the job
  publishes, which a fast machine reaches within the moments chosen, leaves
  each table whole, the previous one or the new one, and a kill after it
  published leaves the new ones); started again, it ends with the tables of a
  clean run, byte for byte, and no staging left behind.
- `output.publish` killed between any two of its renames (a subprocess that
  SIGKILLs itself at the k-th `os.replace`): the next job's first step
  (`clean_stale_staging`) finishes or discards the swap, so the three tables
  always come from one run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import ROOT, load_table
from footprint_audit.pipelines.output import publish as output
from footprint_audit.pipelines.output import ownership
from footprint_audit.schemas.manifest import MANIFEST_TABLE

TABLES = ("readings", "dead_letters", "runs")
#: What a finished output folder holds: the tables, the manifest of the files read, and the marker that this tool wrote them.
FINISHED = sorted([*TABLES, MANIFEST_TABLE, ownership.MARKER])


def make_input(d: Path, files: int, runs_per_file: int, calls_per_run: int, tag: str = "") -> None:
    d.mkdir(parents=True)
    for f in range(files):
        lines = []
        for r in range(runs_per_file):
            run_id = f"run-{tag}{f:03d}{r:03d}-1"
            meta = {"runId": run_id, "wallClockMs": 1790400000000 + r}
            for c in range(calls_per_run):
                cid = f"c{c}"
                lines.append({"type": "agentfootprint.stream.tool_start",
                              "payload": {"toolCallId": cid, "toolName": "list_hosts"}, "meta": meta})
                if c % 3 == 0:
                    lines.append({"type": "agentfootprint.tools.absent", "payload": {"toolCallId": cid}, "meta": meta})
                lines.append({"type": "agentfootprint.stream.tool_end",
                              "payload": {"toolCallId": cid, "result": {"hosts": ["h"] * (c % 4)}, "durationMs": c},
                              "meta": meta})
            lines.append({"type": "agentfootprint.tools.absent", "payload": {}, "meta": meta})  # a dead letter
        (d / f"part-{f:03d}.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n{broken\n")


def snapshot(out: Path) -> dict:
    """Every file under the output tables, by relative path → bytes."""
    return {str(p.relative_to(out)): p.read_bytes() for t in TABLES for p in (out / t).rglob("*") if p.is_file()}


def _table(files: dict, table: str) -> dict:
    """The files of one table in a `snapshot`."""
    return {name: data for name, data in files.items() if name.split(os.sep, 1)[0] == table}


def _inode(path: Path) -> int | None:
    """The inode of a path, None when nothing is there (a table being moved)."""
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None


def cli(inp: Path, out: Path, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "footprint_audit.pipelines.cli", "reassess", "--input", str(inp), "--output", str(out),
         "--no-progress", "--quiet"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **kw,
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    base = tmp_path_factory.mktemp("kill")
    make_input(base / "big", files=24, runs_per_file=40, calls_per_run=12)
    make_input(base / "small", files=1, runs_per_file=2, calls_per_run=2, tag="s")
    clean = base / "clean"
    p = cli(base / "big", clean)
    _, err = p.communicate(timeout=600)
    assert p.returncode == 0, err.decode()[-2000:]
    t0 = time.monotonic()
    p = cli(base / "small", base / "small-out")
    p.communicate(timeout=600)
    assert p.returncode == 0
    return base, snapshot(clean), time.monotonic() - t0


@pytest.mark.parametrize("when", ["early", "middle", "staged-files-exist", "publishing"])
def test_a_killed_job_leaves_the_previous_tables_and_a_restart_equals_a_clean_run(inputs, when, tmp_path):
    base, clean, _ = inputs
    out = tmp_path / "out"
    shutil.copytree(base / "small-out", out)
    previous = snapshot(out)
    p = cli(base / "big", out)
    try:
        if when == "early":
            time.sleep(1.0)
        elif when == "middle":
            time.sleep(3.0)
        else:  # kill once the job has started writing staged Parquet files, or once it has started publishing
            readings = _inode(out / "readings")

            def ready() -> bool:
                if when == "staged-files-exist":
                    return bool(list((out / output.STAGING).glob("*/*/*.parquet")))
                # the swap has begun (or is done): its journal is in place, or `readings/` is another folder
                return (out / output.STAGING / output.PUBLISHING).exists() or _inode(out / "readings") != readings

            deadline = time.monotonic() + 120
            while not ready() and time.monotonic() < deadline:
                if p.poll() is not None:
                    break
                time.sleep(0.01 if when == "staged-files-exist" else 0.0005)
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    finally:
        p.wait(timeout=60)
        p.stdout.close()
        p.stderr.close()
    if p.returncode == -signal.SIGKILL:
        after = snapshot(out)
        if (out / output.STAGING / output.PUBLISHING).is_file():
            # Killed while publishing (its journal names its staging): each table is the previous run's or the
            # new one, whole, or the one being moved is in the staging folder; the restart finishes the swap.
            for t in TABLES:
                assert _table(after, t) in (_table(previous, t), _table(clean, t), {}), (when, t)
        else:
            # Killed before publishing (the previous run's tables) or after it (the new ones): never a mix.
            assert after in (previous, clean), when
        # The lock of the killed job is left behind (stale: the kernel let go of it), and taken over below.
        assert set(os.listdir(out)) <= {*FINISHED, output.STAGING, ownership.LOCK}
    else:  # pragma: no cover - the machine finished the job before the kill
        assert p.returncode == 0
    again = cli(base / "big", out)
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err.decode()[-2000:]
    assert "Traceback" not in err.decode()
    assert snapshot(out) == clean
    assert sorted(os.listdir(out)) == FINISHED


KILL_AT = """
import os, signal, sys
from footprint_audit.pipelines.output import publish as output
from footprint_audit.pipelines.output import ownership
import json
from pathlib import Path
# The publishing job owns its staging folder (it is gone after the kill).
(Path(sys.argv[2]) / ownership.OWNER).write_text(json.dumps(ownership.owner_note()))
n, real, calls = int(sys.argv[1]), os.replace, [0]
def replace(a, b):
    calls[0] += 1
    if calls[0] == n:
        os.kill(os.getpid(), signal.SIGKILL)
    real(a, b)
os.replace = replace
output.publish(sys.argv[2], sys.argv[3])
"""


@pytest.mark.parametrize("k", range(1, 10))
def test_a_publish_killed_between_renames_is_finished_or_discarded_never_mixed(inputs, tmp_path, k):
    base, clean, _ = inputs
    out = tmp_path / "out"
    shutil.copytree(base / "small-out", out)
    old = {t: load_table(out, t) for t in TABLES}
    new = {t: load_table(_clean_dir(base), t) for t in TABLES}
    staged = Path(output.new_staging(str(out)))
    for t in TABLES:
        shutil.copytree(_clean_dir(base) / t, staged / t)
    res = subprocess.run([sys.executable, "-c", KILL_AT.format(root=str(ROOT)), str(k), str(staged), str(out)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode in (0, -signal.SIGKILL), res.stderr
    output.clean_stale_staging(str(out))  # what the next job does first
    got = {t: load_table(out, t) for t in TABLES}
    assert got in (old, new), f"mixed tables after a kill at rename {k}: " + str({t: got[t] == new[t] for t in TABLES})
    assert sorted(os.listdir(out)) == FINISHED


def _clean_dir(base: Path) -> Path:
    return base / "clean"
