"""`transforms.process.worker_gc`: the collector's thresholds are raised once per process, never lowered, and can be left alone."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers import ROOT

PROBE = (
    "import gc, sys; gc.set_threshold(*{start!r});"
    "from footprint_audit.transforms.process import tune_gc; first = tune_gc(); second = tune_gc();"
    "print(first, second, *gc.get_threshold(), gc.get_freeze_count() > 0)"
)


def _env() -> dict:
    """This process's environment without the opt-out."""
    env = dict(os.environ)
    env.pop("FOOTPRINT_AUDIT_GC", None)
    return env


def _probe(start: tuple[int, int, int], env_value: str | None = None) -> list[str]:
    env = _env()
    if env_value is not None:
        env["FOOTPRINT_AUDIT_GC"] = env_value
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(root=str(ROOT), start=start)],
        env=env, capture_output=True, text=True, check=True,
    )
    return out.stdout.split()


def test_thresholds_are_raised_once_per_process():
    assert _probe((700, 10, 10)) == ["True", "False", "10000", "20", "100", "True"]


def test_higher_thresholds_are_kept():
    assert _probe((200_000, 50, 500)) == ["True", "False", "200000", "50", "500", "True"]


def test_the_environment_can_leave_the_thresholds_alone():
    assert _probe((700, 10, 10), "default") == ["False", "False", "700", "10", "10", "False"]


JOB = (
    "import gc, sys;"
    "from footprint_audit.pipelines.reassess import command as reassess;"
    "code = reassess.run(['--input', {inp!r}, '--output', {out!r}, '--declarations', {decl!r}, '--no-progress', '--quiet']);"
    "print(code, *gc.get_threshold())"
)


def test_a_job_runs_with_the_thresholds_its_reading_dofns_set(tmp_path):
    env = _env()
    code = JOB.format(root=str(ROOT), inp=str(ROOT / "examples" / "recordings"), out=str(tmp_path / "out"),
                      decl=str(ROOT / "examples" / "declarations.json"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split()[-4:] == ["0", "10000", "20", "100"]
