"""A real OpenTelemetry Collector for the tests: OTLP in on 127.0.0.1, OTLP/JSON lines out to a file.

The binary is `tools/collector/builder-config.yaml` built by the Collector Builder
(`tools/collector/build.py`: once, into `$FOOTPRINT_AUDIT_GO_BIN` or `~/.cache/footprint-audit/go/bin`,
like the Google fakes); where it is not built and Go is missing, the test is skipped, saying so
(`.ci/run` builds it, so CI runs it). `running_collector` starts it with an `otlp` receiver
(HTTP and gRPC, free ports) and a `file` exporter (`format: json` unless told otherwise), waits until both ports accept
connections, and stops it with SIGTERM at the end, so the exporter has flushed and closed the file
when the block is left.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from tools.collector.build import GoMissing, ensure_collector
from tools.kafka_local import free_port

#: How long a start may take: a cold page cache and a busy 2-core machine.
START_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0


@dataclass(frozen=True)
class Collector:
    """A running Collector: where to send OTLP, and the file it writes."""

    http_endpoint: str  # OTLP/HTTP base, e.g. http://127.0.0.1:4318 (traces at /v1/traces)
    grpc_endpoint: str  # OTLP/gRPC, host:port
    path: Path  # the file exporter's output
    log: Path  # the Collector's own stdout and stderr


def collector_binary() -> Path:
    """The built Collector, or the test skipped where Go is missing."""
    try:
        return ensure_collector()
    except GoMissing as missing:
        pytest.skip(str(missing))


def _accepts(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _config(http_port: int, grpc_port: int, path: Path, file_exporter: dict[str, Any]) -> dict[str, Any]:
    return {
        "receivers": {"otlp": {"protocols": {
            "http": {"endpoint": f"127.0.0.1:{http_port}"},
            "grpc": {"endpoint": f"127.0.0.1:{grpc_port}"},
        }}},
        "exporters": {"file": {"path": str(path), "format": "json", "flush_interval": "100ms", **file_exporter}},
        "service": {
            # no metrics endpoint of its own (its default port could be taken), logs to stderr
            "telemetry": {"metrics": {"level": "none"}, "logs": {"level": "info"}},
            "pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["file"]},
                          "logs": {"receivers": ["otlp"], "exporters": ["file"]}},
        },
    }


@contextmanager
def running_collector(folder: Path, **file_exporter: Any) -> Iterator[Collector]:
    """The Collector started with its config, output and log in `folder`; stopped, its file closed, on exit.
    `file_exporter`: settings of its `file` exporter over the defaults (`format="proto"`, `compression="zstd"`)."""
    binary = collector_binary()
    folder.mkdir(parents=True, exist_ok=True)
    http_port, grpc_port = free_port(), free_port()
    while grpc_port == http_port:
        grpc_port = free_port()
    collector = Collector(f"http://127.0.0.1:{http_port}", f"127.0.0.1:{grpc_port}", folder / "traces.jsonl",
                          folder / "collector.log")
    config = folder / "collector.yaml"
    config.write_text(json.dumps(_config(http_port, grpc_port, collector.path, file_exporter), indent=1))  # JSON is YAML
    with collector.log.open("wb") as log:
        proc = subprocess.Popen([str(binary), "--config", f"file:{config}"], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not (_accepts(http_port) and _accepts(grpc_port)):
            if proc.poll() is not None:
                raise AssertionError(f"the Collector exited {proc.returncode} at start:\n{collector.log.read_text()[-4000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"the Collector did not listen within {START_TIMEOUT:.0f} s:\n"
                                     f"{collector.log.read_text()[-4000:]}")
            time.sleep(0.05)
        yield collector
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=STOP_TIMEOUT)
    assert proc.returncode == 0, f"the Collector exited {proc.returncode} on SIGTERM:\n{collector.log.read_text()[-4000:]}"
