"""`transforms.process.memory.leave_huge_pages_off`: a job's processes ask Linux for no transparent huge
pages, the processes they start inherit it, and the environment can keep the system's setting.

The setting is inherited (a test session that ran a job in its own process has it already), so
each probe clears it first (`PR_SET_THP_DISABLE` 0) and starts from the system's setting."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from helpers import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux process setting")

#: Clears the setting (prctl 41), then prints PR_GET_THP_DISABLE (42), what the call returned,
#: and the setting in this process and in a child it starts.
CLEAR = "assert ctypes.CDLL(None).prctl(41, 0, 0, 0, 0) == 0;"
PROBE = (
    "import ctypes, subprocess, sys;" + CLEAR +
    "start = ctypes.CDLL(None).prctl(42, 0, 0, 0, 0);"
    "from footprint_audit.transforms.process import leave_huge_pages_off;"
    "done = leave_huge_pages_off();"
    "get = 'import ctypes; print(ctypes.CDLL(None).prctl(42, 0, 0, 0, 0))';"
    "child = subprocess.run([sys.executable, '-c', get], capture_output=True, text=True, check=True).stdout.strip();"
    "print(start, done, ctypes.CDLL(None).prctl(42, 0, 0, 0, 0), child)"
)


def _env(value: str | None) -> dict:
    env = dict(os.environ)
    env.pop("FOOTPRINT_AUDIT_HUGE_PAGES", None)
    if value is not None:
        env["FOOTPRINT_AUDIT_HUGE_PAGES"] = value
    return env


def _probe(value: str | None) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(root=str(ROOT))], env=_env(value),
                         capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_huge_pages_are_left_off_for_the_process_and_its_children():
    assert _probe(None) == ["0", "True", "1", "1"]


def test_the_environment_keeps_the_system_setting():
    assert _probe("default") == ["0", "False", "0", "0"]


JOB = (
    "import ctypes, sys;" + CLEAR +
    "from footprint_audit.pipelines.reassess import command as reassess;"
    "code = reassess.run(['--input', {inp!r}, '--output', {out!r}, '--declarations', {decl!r}, '--no-progress', '--quiet']);"
    "print(code, ctypes.CDLL(None).prctl(42, 0, 0, 0, 0))"
)


@pytest.mark.parametrize("value", [None, "default"])
def test_a_job_leaves_them_off_unless_told(tmp_path, value):
    code = JOB.format(root=str(ROOT), inp=str(ROOT / "examples" / "recordings"), out=str(tmp_path / "out"),
                      decl=str(ROOT / "examples" / "declarations.json"))
    out = subprocess.run([sys.executable, "-c", code], env=_env(value), capture_output=True, text=True, check=True,
                         cwd=ROOT)
    assert out.stdout.split()[-2:] == ["0", "1" if value is None else "0"]
