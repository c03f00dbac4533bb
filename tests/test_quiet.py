"""Log lines stay off stderr unless `FOOTPRINT_AUDIT_LOG` asks for them (`pipelines.launch.quiet`, one mechanism)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from helpers import ROOT
from footprint_audit.pipelines.launch import quiet

# Lines logged once the command line has installed the quiet, as Beam and another library would log them.
LOGS = """
import logging
from footprint_audit.pipelines.launch import install
install()
logging.getLogger("apache_beam.utils.subprocess_server").warning("Really starting service at x")
logging.getLogger("somewhere").warning("a warning")
logging.getLogger("somewhere").info("an info")
logging.getLogger("apache_beam.runners.common").error("a worker's error")
logging.warning("a root warning")
"""


# Threads that die as an SDK worker's do when its runner hangs up, and one that dies of a bug.
THREADS = """
import threading
import grpc
from footprint_audit.pipelines.launch import install
install()

def hung_up():
    raise grpc.RpcError("StatusCode.CANCELLED: Multiplexer hanging up")

def closed():
    raise ValueError("Cannot invoke RPC on closed channel! (gRPC)")

def bug():
    raise KeyError("a bug in a thread")

for target in (hung_up, closed, bug):
    t = threading.Thread(target=target, name=target.__name__)
    t.start()
    t.join()
"""


def _logged(level: str | None, code: str = LOGS) -> str:
    env = {k: v for k, v in os.environ.items() if k != quiet.LOG_ENV}
    if level is not None:
        env[quiet.LOG_ENV] = level
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stderr


def test_by_default_no_log_line_reaches_stderr_not_even_an_error():
    assert _logged(None) == ""


def test_a_level_shows_the_lines_from_it_without_the_known_noise():
    assert _logged("warning").splitlines() == [
        "WARNING:somewhere:a warning",
        "ERROR:apache_beam.runners.common:a worker's error",
        "WARNING:root:a root warning",
    ]
    assert _logged("ERROR").splitlines() == ["ERROR:apache_beam.runners.common:a worker's error"]


def test_debug_or_any_other_word_shows_every_line():
    for value in ("DEBUG", "all"):
        lines = _logged(value).splitlines()
        assert "WARNING:apache_beam.utils.subprocess_server:Really starting service at x" in lines
        assert "INFO:somewhere:an info" in lines and len(lines) == 5


def test_a_thread_ended_by_its_closed_grpc_stream_is_quiet_and_any_other_thread_error_is_shown():
    err = _logged(None, THREADS)
    assert "KeyError: 'a bug in a thread'" in err and "Exception in thread bug" in err
    assert "Multiplexer" not in err and "closed channel" not in err and "hung_up" not in err
    debug = _logged("DEBUG", THREADS)
    assert "DEBUG:footprint_audit.pipelines.launch.quiet:thread hung_up ended with its closed gRPC stream" in debug
    assert "Multiplexer hanging up" in debug and "thread closed ended" in debug


@pytest.mark.parametrize("value, level", [("", None), ("info", 20), ("Warn", 30), ("15", 15), ("verbose", 10)])
def test_the_level_is_read_without_a_traceback_for_a_typo(monkeypatch, value, level):
    monkeypatch.setenv(quiet.LOG_ENV, value)
    assert quiet.shown_level() == level


def test_a_job_shows_beams_own_lines_when_asked_and_none_otherwise(tmp_path):
    args = [sys.executable, "-m", "footprint_audit.pipelines.cli", "reassess", "--input", "examples/recordings/**",
            "--declarations", "examples/declarations.json", "--no-progress", "--quiet"]
    env = {k: v for k, v in os.environ.items() if k != quiet.LOG_ENV}
    quiet_run = subprocess.run([*args, "--output", str(tmp_path / "a")], cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=600)
    assert quiet_run.returncode == 0 and quiet_run.stderr == "", quiet_run.stderr[-3000:]
    shown = subprocess.run([*args, "--output", str(tmp_path / "b")], cwd=ROOT, env={**env, quiet.LOG_ENV: "INFO"},
                           capture_output=True, text=True, timeout=600)
    assert shown.returncode == 0 and "INFO:apache_beam." in shown.stderr, shown.stderr[-3000:]


# Every module of the package, imported: no log handler and no thread hook appear (the command line installs them).
IMPORT_ALL = """
import importlib, logging, pkgutil, threading
import footprint_audit
logging.getLogger().addHandler(logging.NullHandler())  # else Beam's first logging.warning() adds one
hook, handlers = threading.excepthook, list(logging.getLogger().handlers)
for m in pkgutil.walk_packages(footprint_audit.__path__, "footprint_audit."):
    importlib.import_module(m.name)
assert threading.excepthook is hook, "a module set threading.excepthook"
assert logging.getLogger().handlers == handlers, logging.getLogger().handlers
print("imported", len(list(pkgutil.walk_packages(footprint_audit.__path__, "footprint_audit."))))
"""


def test_importing_any_module_installs_no_log_handler_and_no_thread_hook():
    res = subprocess.run([sys.executable, "-c", IMPORT_ALL], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert int(res.stdout.split()[-1]) > 90
