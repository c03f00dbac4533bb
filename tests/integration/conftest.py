"""Fixtures for the integration tests: cached jars, a real Kafka broker, and
the pipeline options that run a Beam pipeline on an embedded Flink.

Outside CI a missing Java/Maven skips these tests; with CI=true (as .ci/run
runs) it fails them, and any skip of an ``integration`` test is turned into a
failure too.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tools import jars as fetch_jars
from tools.kafka_local import KafkaBroker

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

MIN_JAVA = 17


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _unavailable(msg: str):
    if in_ci():
        pytest.fail(f"integration prerequisites missing in CI: {msg}", pytrace=False)
    pytest.skip(msg)


def java_major(java: str) -> int:
    out = subprocess.run([java, "-version"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60).stdout
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not m:
        raise RuntimeError(f"cannot parse `java -version`: {out!r}")
    major = int(m.group(1))
    return int(m.group(2)) if major == 1 else major


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    # an expected failure (xfail) is reported as skipped too: it is not a missing prerequisite
    if report.skipped and not hasattr(report, "wasxfail") and in_ci() and item.get_closest_marker("integration"):
        report.outcome = "failed"
        report.longrepr = f"integration test skipped under CI=true: {report.longrepr}"


@pytest.fixture(scope="session")
def integration_jars() -> dict:
    """Paths from tools/fetch_jars.py, fetching with Maven on first use."""
    java = shutil.which("java")
    if not java:
        _unavailable("`java` not on PATH (need a JDK >= 17: apt-get install -y "
                     "openjdk-17-jdk-headless)")
    major = java_major(java)
    if major < MIN_JAVA:
        _unavailable(f"Java {major} found, need >= {MIN_JAVA} (Kafka 4 broker)")
    if not fetch_jars.is_fetched() and not shutil.which("mvn"):
        _unavailable("jars not cached and `mvn` not on PATH to fetch them "
                     "(apt-get install -y maven; python tools/fetch_jars.py)")
    try:
        return fetch_jars.ensure_jars()
    except fetch_jars.FetchError as e:
        _unavailable(str(e))


@pytest.fixture
def kafka_broker(integration_jars, tmp_path):
    """A started single-node KRaft broker on 127.0.0.1; stopped afterwards."""
    broker = KafkaBroker(integration_jars["kafka_lib"], workdir=tmp_path / "kafka")
    with broker:
        yield broker


@pytest.fixture
def flink_args(integration_jars, tmp_path, monkeypatch):
    """Returns f(streaming: bool) -> argv for FlinkRunner on an embedded Flink.

    FlinkRunner starts the job server (``java -jar job-server.jar``) per
    pipeline and, by Beam's design, stops it only at interpreter exit
    (StopOnExitJobServer + atexit).  The fixture stops the ones its test
    started, so JVMs do not pile up over a session and no Beam log line is
    printed after pytest's closing summary.
    """
    from apache_beam.runners.portability import job_server

    started = []
    original_start = job_server.StopOnExitJobServer.start

    def recording_start(self):
        started.append(self)
        return original_start(self)

    monkeypatch.setattr(job_server.StopOnExitJobServer, "start", recording_start)
    def make(streaming: bool = True, parallelism: int = 1, extra=()):
        args = [
            "--runner=FlinkRunner",
            "--flink_master=[local]",
            f"--flink_job_server_jar={integration_jars['flink_job_server_jar']}",
            "--environment_type=LOOPBACK",
            f"--parallelism={parallelism}",
            f"--temp_location={tmp_path / 'beam-temp'}",
        ]
        if streaming:
            args.append("--streaming")
        return args + list(extra)
    yield make
    for server in started:
        server.stop()
